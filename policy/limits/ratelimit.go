package limits

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Rate-limit errors. The edge decides how to answer them; none of them
// carries Redis text or a secret.
var (
	// ErrInvalidLimit means a Limit (or a cost) cannot be evaluated: a
	// non-positive Rate or Per, or a negative Burst. It is a configuration
	// or programming error, not something a client did.
	ErrInvalidLimit = errors.New("invalid rate limit")
	// ErrExceedsBurst means the cost of one request is larger than the
	// whole burst of its limit, so it can never pass however long the client
	// waits (for the upload byte budget: the declared size exceeds the
	// whole budget: too large, not too soon). Returned as *ExceedsBurstError.
	ErrExceedsBurst = errors.New("request cost exceeds the whole limit")
	// ErrLimiterUnavailable wraps every failure of a shared (Redis) limiter
	// to decide. The failover limiter never returns it: it answers from its
	// local fallback instead.
	ErrLimiterUnavailable = errors.New("rate limiter unavailable")
)

// Limit is a GCRA limit: Rate units per Per on average, with Burst units
// allowed at once. The emission interval is Per/Rate; a key is over the
// limit when admitting the request would put its theoretical arrival time
// more than Burst emission intervals into the future.
//
// Burst is the bucket's capacity: an idle key admits Burst unit-cost
// requests back to back, and over any window W a key is admitted at most
// Burst + W*Rate/Per units. Burst 0 behaves as 1 (a GCRA without tolerance
// still admits one request per emission interval).
type Limit struct {
	Rate  int
	Per   time.Duration
	Burst int
}

// Validate returns an error wrapping ErrInvalidLimit when l cannot be
// evaluated.
func (l Limit) Validate() error {
	switch {
	case l.Rate <= 0:
		return fmt.Errorf("%w: rate %d must be positive", ErrInvalidLimit, l.Rate)
	case l.Per <= 0:
		return fmt.Errorf("%w: period %s must be positive", ErrInvalidLimit, l.Per)
	case l.Burst < 0:
		return fmt.Errorf("%w: burst %d must not be negative", ErrInvalidLimit, l.Burst)
	}
	return nil
}

// Capacity is the effective burst, at least one: the most units an idle
// key admits at once, and the Limit of every Decision under l.
func (l Limit) Capacity() int64 {
	if l.Burst < 1 {
		return 1
	}
	return int64(l.Burst)
}

// Interval is the emission interval (Per/Rate) in nanoseconds. Float
// arithmetic keeps byte budgets exact enough (20 GiB per hour is 167.6 ns
// per byte) and cannot overflow for costs up to 1e11 and beyond. l must be
// valid.
func (l Limit) Interval() float64 { return float64(l.Per) / float64(l.Rate) }

// Decision is the outcome of one limit check.
type Decision struct {
	// Allowed reports whether the request passed and was charged.
	Allowed bool
	// Limit is the limit's capacity (its burst), in the limit's units.
	Limit int
	// Remaining is how many units could pass right now after this decision,
	// between 0 and Limit.
	Remaining int
	// RetryAfter is how long to wait before the same request can pass; zero
	// when Allowed.
	RetryAfter time.Duration
	// ResetAfter is how long until the key is back to a full bucket
	// (Remaining == Limit) if nothing else is charged.
	ResetAfter time.Duration
}

// Limiter decides whether a request of a given cost may pass under a limit.
//
// The key names the limited subject and the limit together (limitkeys.go
// builds every key): two limits checked with the same key share one bucket.
//
// Cost is in the limit's units: 1 for a request, the declared size for a
// byte budget (costs up to 1e11 and beyond are exact enough, nothing
// overflows). A cost larger than the limit's burst can never pass: Allow
// returns a denied Decision and an *ExceedsBurstError, without charging. A
// negative cost refunds: it gives back units charged earlier (for example
// when an upload turns out smaller than declared), never beyond a full
// bucket, and is always Allowed. Cost 0 reads the state without changing it.
//
// Implementations are safe for concurrent use.
type Limiter interface {
	Allow(ctx context.Context, key string, l Limit, cost int64) (Decision, error)
}

// Check is one limit of a batch.
type Check struct {
	Key   string
	Limit Limit
	Cost  int64
}

// BatchLimiter checks several limits for one request at once.
//
// AllowAll returns one Decision per check, in order. The request is admitted
// only if every check allows it; when one denies, none of the checks is left
// charged (Decisions still say which checks would have passed). Errors are
// as for Allow; an *ExceedsBurstError from any check means nothing was
// charged.
type BatchLimiter interface {
	Limiter
	AllowAll(ctx context.Context, checks []Check) ([]Decision, error)
}

// AllowAll checks every limit with lim: in one call when lim is a
// BatchLimiter, else one Allow per check, refunding the charged ones when a
// later check denies.
func AllowAll(ctx context.Context, lim Limiter, checks []Check) ([]Decision, error) {
	if b, ok := lim.(BatchLimiter); ok {
		return b.AllowAll(ctx, checks)
	}
	if err := ValidateChecks(checks); err != nil {
		return Denials(checks), err
	}
	ds := make([]Decision, len(checks))
	for i, c := range checks {
		d, err := lim.Allow(ctx, c.Key, c.Limit, c.Cost)
		if err != nil || !d.Allowed {
			ds[i] = d
			refund(ctx, lim, checks[:i], ds[:i])
			return ds, err
		}
		ds[i] = d
	}
	return ds, nil
}

// refund gives back the positive costs of checks that were charged.
func refund(ctx context.Context, lim Limiter, checks []Check, ds []Decision) {
	for i, c := range checks {
		if ds[i].Allowed && c.Cost > 0 {
			// Best effort: a failed refund leaves the key charged, which errs
			// on the side of the limit.
			_, _ = lim.Allow(ctx, c.Key, c.Limit, -c.Cost)
		}
	}
}

// Allowed reports whether every decision allowed its check.
func Allowed(ds []Decision) bool {
	for _, d := range ds {
		if !d.Allowed {
			return false
		}
	}
	return true
}

// Strictest picks the decision whose headers a response should carry: the
// denial with the longest RetryAfter if any check denied, else the decision
// with the fewest Remaining units. Compare only decisions in the same units
// (requests with requests). It returns an allowing zero Decision for none.
func Strictest(ds []Decision) Decision {
	best := -1
	for i, d := range ds {
		switch {
		case best < 0:
			best = i
		case !d.Allowed && ds[best].Allowed:
			best = i
		case d.Allowed != ds[best].Allowed:
		case !d.Allowed && d.RetryAfter > ds[best].RetryAfter:
			best = i
		case d.Allowed && d.Remaining < ds[best].Remaining:
			best = i
		}
	}
	if best < 0 {
		return Decision{Allowed: true}
	}
	return ds[best]
}

// ExceedsBurstError reports a cost that is larger than the whole burst of
// its limit. It unwraps to ErrExceedsBurst. Both figures are in the limit's
// units (requests, bytes) and safe to show the client.
type ExceedsBurstError struct {
	// Cost is what the check asked to charge.
	Cost int64
	// Burst is the limit's capacity: the most one check can ever charge.
	Burst int64
}

func (e *ExceedsBurstError) Error() string {
	return fmt.Sprintf("request cost %d exceeds the whole limit of %d", e.Cost, e.Burst)
}

// Unwrap returns ErrExceedsBurst.
func (e *ExceedsBurstError) Unwrap() error { return ErrExceedsBurst }

// ValidateCost returns an error wrapping ErrInvalidLimit when l cannot be
// evaluated, or an *ExceedsBurstError when cost is more than l's whole
// burst. Every Limiter calls it before any I/O, so a check that can never
// pass costs no round trip and charges nothing.
func (l Limit) ValidateCost(cost int64) error {
	if err := l.Validate(); err != nil {
		return err
	}
	if c := l.Capacity(); cost > c {
		return &ExceedsBurstError{Cost: cost, Burst: c}
	}
	return nil
}

// Denial is the Decision that goes with an error of a check under l:
// denied, nothing charged, and the limit's capacity for the headers.
func (l Limit) Denial() Decision { return Decision{Limit: int(l.Capacity())} }

// ValidateChecks is ValidateCost for every check of a batch: the first
// error, or nil.
func ValidateChecks(checks []Check) error {
	for _, c := range checks {
		if err := c.Limit.ValidateCost(c.Cost); err != nil {
			return err
		}
	}
	return nil
}

// Denials is the answer of a batch that goes with an error: one Denial per
// check, nothing charged.
func Denials(checks []Check) []Decision {
	ds := make([]Decision, len(checks))
	for i, c := range checks {
		ds[i] = c.Limit.Denial()
	}
	return ds
}
