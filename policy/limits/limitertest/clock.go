package limitertest

import (
	"sync"
	"time"
)

// Clock is a settable clock for limiters, safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock set near real time (whole seconds), so times a
// limiter sends to a server look like the server's own.
func NewClock() *Clock {
	return &Clock{t: time.Now().Truncate(time.Second)}
}

// Now returns the clock's time; pass it as a limiter's clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock by d (backwards when d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
