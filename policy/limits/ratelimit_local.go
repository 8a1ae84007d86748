package limits

import (
	"context"
	"sync"
	"time"
)

// DefaultLocalMaxKeys bounds a LocalLimiter's memory when LocalOptions
// leaves MaxKeys zero: about 100 bytes per key plus the key string.
const DefaultLocalMaxKeys = 100_000

// LocalOptions configures a LocalLimiter.
type LocalOptions struct {
	// MaxKeys bounds the number of keys held. Idle keys (full buckets) are
	// dropped first; if the limiter is full of busy keys, arbitrary ones are
	// dropped, which forgets their charges (fails open for them) rather
	// than grow without bound. Default DefaultLocalMaxKeys.
	MaxKeys int
	// Now is the clock; default time.Now. Tests inject a fake one.
	Now func() time.Time
}

// LocalLimiter is an in-process GCRA limiter with the same semantics as the
// Redis one. It is correct for one replica only: each process counts
// separately. It is safe for concurrent use and needs no Close.
type LocalLimiter struct {
	now     func() time.Time // nil: the real clock, read monotonic only
	epoch   time.Time
	maxKeys int

	mu   sync.Mutex
	tats map[string]float64 // theoretical arrival time, ns since epoch
}

var _ BatchLimiter = (*LocalLimiter)(nil)

// NewLocalLimiter returns an empty LocalLimiter.
func NewLocalLimiter(opts LocalOptions) *LocalLimiter {
	epoch := time.Now()
	if opts.Now != nil {
		epoch = opts.Now()
	}
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = DefaultLocalMaxKeys
	}
	return &LocalLimiter{
		now:     opts.Now,
		epoch:   epoch,
		maxKeys: opts.MaxKeys,
		tats:    make(map[string]float64),
	}
}

// Allow implements Limiter. It never fails except for an invalid limit
// (ErrInvalidLimit) or a cost over the burst (*ExceedsBurstError).
func (l *LocalLimiter) Allow(_ context.Context, key string, lim Limit, cost int64) (Decision, error) {
	if err := lim.ValidateCost(cost); err != nil {
		return lim.Denial(), err
	}
	now := l.elapsed()
	l.mu.Lock()
	defer l.mu.Unlock()
	d, _ := l.apply(key, now, lim, cost)
	return d, nil
}

// AllowAll implements BatchLimiter atomically: the checks are evaluated
// under one lock and rolled back together when one denies.
func (l *LocalLimiter) AllowAll(_ context.Context, checks []Check) ([]Decision, error) {
	if err := ValidateChecks(checks); err != nil {
		return Denials(checks), err
	}
	now := l.elapsed()
	ds := make([]Decision, len(checks))
	type undo struct {
		key     string
		tat     float64
		existed bool
	}
	undos := make([]undo, 0, len(checks))

	l.mu.Lock()
	defer l.mu.Unlock()
	denied := false
	for i, c := range checks {
		old, existed := l.tats[c.Key]
		d, changed := l.apply(c.Key, now, c.Limit, c.Cost)
		ds[i] = d
		denied = denied || !d.Allowed
		if changed {
			undos = append(undos, undo{c.Key, old, existed})
		}
	}
	if denied {
		// Restore in reverse so a key checked twice ends as it began.
		for j := len(undos) - 1; j >= 0; j-- {
			u := undos[j]
			if u.existed {
				l.tats[u.key] = u.tat
			} else {
				delete(l.tats, u.key)
			}
		}
	}
	return ds, nil
}

// apply runs one GCRA step on key; l.mu must be held. It reports whether
// the stored state changed.
func (l *LocalLimiter) apply(key string, now float64, lim Limit, cost int64) (Decision, bool) {
	tat, ok := l.tats[key]
	if !ok {
		tat = now
	}
	newTat, d := gcraStep(tat, now, lim, cost)
	if !d.Allowed || cost == 0 {
		return d, false
	}
	if newTat <= now {
		// A full bucket is the same as no entry.
		if ok {
			delete(l.tats, key)
		}
		return d, ok
	}
	if !ok && len(l.tats) >= l.maxKeys {
		l.evict(now)
	}
	l.tats[key] = newTat
	return d, true
}

// evict makes room for a new key: first every idle key, then, if the map is
// still full of busy keys, arbitrary ones down to 90% of the bound so the
// cost of a sweep is paid rarely. l.mu must be held.
func (l *LocalLimiter) evict(now float64) {
	for k, tat := range l.tats {
		if tat <= now {
			delete(l.tats, k)
		}
	}
	target := l.maxKeys - l.maxKeys/10
	if target >= l.maxKeys {
		target = l.maxKeys - 1
	}
	for k := range l.tats {
		if len(l.tats) <= target {
			break
		}
		delete(l.tats, k)
	}
}

// Len returns the number of keys held (for tests and metrics).
func (l *LocalLimiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.tats)
}

// elapsed is the time since epoch. On the real clock time.Since reads the
// monotonic clock alone, half of what time.Now reads, on every decision.
func (l *LocalLimiter) elapsed() float64 {
	if l.now == nil {
		return float64(time.Since(l.epoch))
	}
	return float64(l.now().Sub(l.epoch))
}
