package keys

import (
	"context"
	"time"
)

// Change is one entry of the store's key change log: the key id changed
// (disabled, deleted, re-limited) at At. Seq identifies the entry.
type Change struct {
	Seq   int64
	KeyID string
	At    time.Time
}

// ChangeLog is the store's log of key changes.
type ChangeLog interface {
	// KeyChangesSince returns the entries with At >= since, in Seq order.
	KeyChangesSince(ctx context.Context, since time.Time) ([]Change, error)
}

// Revoker carries revocations to this replica's Authenticator: every
// Interval it reads the change log and makes the Authenticator forget each
// changed key, so a key disabled or deleted through any replica (or the CLI)
// is refused here within Interval plus one query.
//
// It is correct without any message bus: the log is durable, so a replica
// that missed polls (the database was unreachable, the process paused) reads
// what it missed on its next poll, from the time of its last successful one.
// It rereads a Margin before that, so an entry whose transaction committed
// late — stamped before the previous poll but visible only after it — is
// still seen; entries already applied are recognised by Seq and skipped.
// Margin must exceed the longest write transaction and the clock skew
// between replicas. The cost is one indexed query per Interval per replica,
// whatever the request rate.
type Revoker struct {
	Log      ChangeLog
	Auth     *Authenticator
	Interval time.Duration // default 1s
	Margin   time.Duration // default 30s
	// OnHealth is told when polling starts failing (with the error) and
	// when it works again (nil): once per transition, so an outage of the
	// database is one line in the log, not one a second. A failed poll is
	// retried from the same point.
	OnHealth func(error)

	failing bool
	now     func() time.Time
	since   time.Time
	applied map[int64]time.Time // Seq -> At of entries within the margin
}

// Run polls until ctx ends. The first poll reads Margin into the past, so a
// replica starting just after a revocation applies it too.
func (r *Revoker) Run(ctx context.Context) {
	interval := r.Interval
	if interval <= 0 {
		interval = time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		err := r.Poll(ctx)
		if ctx.Err() != nil {
			return
		}
		if (err != nil) != r.failing {
			r.failing = err != nil
			if r.OnHealth != nil {
				r.OnHealth(err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Poll reads the log once and applies what is new.
func (r *Revoker) Poll(ctx context.Context) error {
	if r.now == nil {
		r.now = time.Now
	}
	margin := r.Margin
	if margin <= 0 {
		margin = 30 * time.Second
	}
	start := r.now()
	if r.since.IsZero() {
		r.since = start
		r.applied = map[int64]time.Time{}
	}
	from := r.since.Add(-margin)
	changes, err := r.Log.KeyChangesSince(ctx, from)
	if err != nil {
		return err
	}
	var ids []string
	for _, c := range changes {
		if _, done := r.applied[c.Seq]; done {
			continue
		}
		r.applied[c.Seq] = c.At
		ids = append(ids, c.KeyID)
	}
	if len(ids) > 0 {
		r.Auth.Forget(ids...)
	}
	// Every change up to start is now applied.
	r.Auth.ChangeLogRead(start)
	for seq, at := range r.applied {
		if at.Before(from) {
			delete(r.applied, seq)
		}
	}
	r.since = start
	return nil
}
