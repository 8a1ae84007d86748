package files

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// A reservation is a lease: it expires a short ReservationTTL after it was
// taken or last renewed, so the quota held by a replica that died
// mid-upload comes back within that time. While uploads run, one renewer
// per Service extends all of their reservations with a single store call
// every RenewInterval.
//
// An upload whose reservation cannot be kept is stopped: when the store
// reports it gone, or when renewals keep failing until the lease would
// lapse before the next attempt. One failed renewal is retried (a store
// blip must not kill every upload of the replica); the upload stops while
// its reservation is still valid, so it never runs on without quota.

// lease is the reservation of one upload in flight.
type lease struct {
	id string

	mu      sync.Mutex
	expires time.Time // as this replica last knew it (a lower bound)
	err     error     // why the lease was lost; nil while it holds
	stop    context.CancelCauseFunc
	settled bool // the upload no longer needs it (committing, or undone)
}

// lost returns why the lease was lost, or nil.
func (l *lease) lost() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// lose marks the lease lost and stops the upload's work in progress.
func (l *lease) lose(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	l.err = err
	if l.stop != nil {
		l.stop(err)
	}
}

// watch derives from ctx a context cancelled (with the loss as its cause)
// when the lease is lost. The returned function releases it.
func (l *lease) watch(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		cancel(l.err)
	}
	l.stop = cancel
	return ctx, func() {
		l.mu.Lock()
		l.stop = nil
		l.mu.Unlock()
		cancel(nil)
	}
}

// leaseSet holds the leases of the Service's uploads in flight.
type leaseSet struct {
	mu   sync.Mutex
	held map[string]*lease
}

func (s *leaseSet) add(l *lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil {
		s.held = make(map[string]*lease)
	}
	s.held[l.id] = l
}

// remove ends the renewal of l: a renewal already under way no longer
// reports it lost, since its reservation is being settled.
func (s *leaseSet) remove(l *lease) {
	s.mu.Lock()
	delete(s.held, l.id)
	s.mu.Unlock()
	l.mu.Lock()
	l.settled = true
	l.mu.Unlock()
}

func (s *leaseSet) snapshot() []*lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*lease, 0, len(s.held))
	for _, l := range s.held {
		out = append(out, l)
	}
	return out
}

// RenewInterval is how often the renewer extends reservations: a third of
// their TTL, so one failed renewal is retried before anything lapses.
func (s *Service) RenewInterval() time.Duration { return s.cfg.ReservationTTL / 3 }

// KeepReservations renews the reservations of this Service's uploads in
// flight every RenewInterval until ctx ends. Run it once per Service for as
// long as uploads may run (stop it after Wait).
func (s *Service) KeepReservations(ctx context.Context) {
	t := time.NewTicker(s.RenewInterval())
	defer t.Stop()
	s.keepReservations(ctx, t.C)
}

func (s *Service) keepReservations(ctx context.Context, tick <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			s.renewReservations(ctx)
		}
	}
}

// renewReservations makes one renewal of every lease held: one store call,
// bounded by the interval (a renewal that lands later is no use).
func (s *Service) renewReservations(ctx context.Context) {
	held := s.leases.snapshot()
	if len(held) == 0 {
		return
	}
	ids := make([]string, len(held))
	for i, l := range held {
		ids[i] = l.id
	}
	interval := s.RenewInterval()
	start := s.now()
	rctx, cancel := context.WithTimeout(ctx, interval)
	renewed, err := s.store.Renew(rctx, ids, s.cfg.ReservationTTL)
	cancel()
	if err != nil {
		now := s.now()
		stopped := 0
		for _, l := range held {
			l.mu.Lock()
			lapses := !l.settled && !l.expires.After(now.Add(interval))
			l.mu.Unlock()
			if lapses {
				l.lose(ErrReservationLost)
				stopped++
			}
		}
		s.log.Warn("could not renew quota reservations",
			slog.Int("reservations", len(held)), slog.Int("uploads_stopped", stopped), slog.Any("error", err))
		return
	}
	alive := make(map[string]bool, len(renewed))
	for _, id := range renewed {
		alive[id] = true
	}
	expires := start.Add(s.cfg.ReservationTTL)
	for _, l := range held {
		l.mu.Lock()
		settled := l.settled
		l.mu.Unlock()
		if settled {
			continue
		}
		if !alive[l.id] {
			l.lose(ErrReservationLost)
			s.log.Warn("an upload's quota reservation was gone; the upload is stopped", slog.String("reservation", l.id))
			continue
		}
		l.mu.Lock()
		l.expires = expires
		l.mu.Unlock()
	}
}
