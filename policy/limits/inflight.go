package limits

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// InFlight caps how many operations (uploads) run at once per key.
//
// Acquire takes one of max slots of key. When ok is true the caller holds a
// lease and must call release exactly when the operation ends (defer it);
// calling it more than once is harmless, and release is never nil (a no-op
// when ok is false). ttl bounds how long a lease outlives a holder that
// died without releasing (a replica killed mid-upload); implementations
// that share leases between processes renew a held lease in the background
// until release, so long operations keep their slot. err reports that the
// implementation could not decide (ErrLimiterUnavailable) or an invalid max
// or ttl (ErrInvalidLimit).
//
// Implementations are safe for concurrent use.
type InFlight interface {
	Acquire(ctx context.Context, key string, max int, ttl time.Duration) (release func(), ok bool, err error)
}

func noRelease() {}

// ValidateInFlight returns an error wrapping ErrInvalidLimit when an InFlight
// cannot honour max and ttl. Implementations call it before any I/O.
func ValidateInFlight(max int, ttl time.Duration) error {
	switch {
	case max < 1:
		return fmt.Errorf("%w: in-flight max %d must be at least 1", ErrInvalidLimit, max)
	case ttl <= 0:
		return fmt.Errorf("%w: lease ttl %s must be positive", ErrInvalidLimit, ttl)
	}
	return nil
}

// LocalInFlight counts in-flight operations in this process only: correct
// for a single replica, and the fallback of redislimit.Failover. Leases need no
// expiry here (they die with the process), so ttl is only validated. Memory
// is proportional to the keys with operations in flight.
type LocalInFlight struct {
	mu     sync.Mutex
	counts map[string]int
}

var _ InFlight = (*LocalInFlight)(nil)

// NewLocalInFlight returns an empty LocalInFlight.
func NewLocalInFlight() *LocalInFlight {
	return &LocalInFlight{counts: make(map[string]int)}
}

// Acquire implements InFlight; it fails only for an invalid max or ttl.
func (l *LocalInFlight) Acquire(_ context.Context, key string, max int, ttl time.Duration) (func(), bool, error) {
	if err := ValidateInFlight(max, ttl); err != nil {
		return noRelease, false, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counts[key] >= max {
		return noRelease, false, nil
	}
	l.counts[key]++
	var once sync.Once
	return func() { once.Do(func() { l.release(key) }) }, true, nil
}

func (l *LocalInFlight) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.counts[key] - 1; n > 0 {
		l.counts[key] = n
	} else {
		delete(l.counts, key)
	}
}

// InUse returns the number of leases held on key.
func (l *LocalInFlight) InUse(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[key]
}
