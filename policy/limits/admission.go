package limits

import (
	"context"
	"errors"
	"time"
)

// Errors of admission: the request may pass later, when the limit allows.
var (
	// ErrRateLimited: a request or upload limit denied the request now.
	ErrRateLimited = errors.New("rate limit exceeded")
	// ErrTooManyUploads: the key already has its maximum of uploads in flight.
	ErrTooManyUploads = errors.New("too many uploads in flight for this key")
)

// LimitedError is a denial by a limit. Its Decision describes that limit
// and no other: the edge answers with it (how long to wait, the limit's
// capacity, none remaining), whatever other limits the request passed.
type LimitedError struct {
	Decision Decision
	// Reason names the limit that denied: LimitRequests, LimitUploads,
	// LimitUploadBytes or LimitUploadsInFlight. These names are stable and
	// safe to show the client.
	Reason string
	err    error
}

func (e *LimitedError) Error() string { return e.Unwrap().Error() + " (" + e.Reason + ")" }

// Unwrap returns ErrTooManyUploads for a denial by the in-flight limit and
// ErrRateLimited for every other (also for a LimitedError built as a
// literal).
func (e *LimitedError) Unwrap() error {
	if e.err == nil {
		return ErrRateLimited
	}
	return e.err
}

// Denied returns the error of a denying decision of the named limit.
func Denied(d Decision, reason string) *LimitedError {
	return &LimitedError{Decision: d, Reason: reason, err: ErrRateLimited}
}

// UploadAdmission applies the fleet-wide limits of uploads, beyond the
// per-key request rate the edge checks (RequestsKey with ClassFiles): the upload rate per
// workspace, the rolling byte budget per workspace (charged the declared
// size up front, reconciled with the real size at the end) and the number
// of uploads in flight per key (a lease that expires if the replica dies).
// The per-file size limit stays a local check that never depends on Redis.
type UploadAdmission struct {
	Limiter  Limiter
	InFlight InFlight
	// Files is the upload rate per workspace; a zero Limit checks none.
	Files Limit
	// Bytes is the byte budget per workspace: Rate bytes per Per, Burst the
	// whole budget.
	Bytes Limit
	// MaxInFlight caps concurrent uploads per key.
	MaxInFlight int
	// LeaseTTL is how long an in-flight lease lives without renewal; the
	// lease renews itself while the upload runs.
	LeaseTTL time.Duration
}

// Admit charges one upload of workspaceID by keyID, declared bytes long. It
// returns ErrExceedsBurst (an *ExceedsBurstError) when declared is more than
// the whole byte budget — no wait would help: the upload is too large, not
// too soon — and a *LimitedError when a limit denies now. release must be called exactly once
// with the bytes actually stored (0 on failure): it refunds the unused part
// of the declared size and ends the lease.
func (a *UploadAdmission) Admit(ctx context.Context, keyID, workspaceID string, declared int64) (release func(actual int64), err error) {
	endLease := func() {}
	if a.InFlight != nil && a.MaxInFlight > 0 {
		var ok bool
		endLease, ok, err = a.InFlight.Acquire(ctx, UploadsInFlightKey(keyID), a.MaxInFlight, a.leaseTTL())
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, &LimitedError{Decision: inFlightDenial(a.MaxInFlight), Reason: LimitUploadsInFlight, err: ErrTooManyUploads}
		}
	}
	bytesKey := UploadBytesKey(workspaceID)
	charged := max(declared, 1)
	checks := []Check{{Key: bytesKey, Limit: a.Bytes, Cost: charged}}
	reasons := []string{LimitUploadBytes}
	if a.Files != (Limit{}) {
		checks = append(checks, Check{Key: UploadsKey(workspaceID), Limit: a.Files, Cost: 1})
		reasons = append(reasons, LimitUploads)
	}
	ds, err := AllowAll(ctx, a.Limiter, checks)
	if err != nil {
		endLease()
		return nil, err
	}
	for i, d := range ds {
		if !d.Allowed {
			endLease()
			return nil, Denied(d, reasons[i])
		}
	}
	released := false
	return func(actual int64) {
		if released {
			return
		}
		released = true
		if unused := charged - max(actual, 0); unused > 0 {
			// Best effort on a context of its own: the request's may be gone.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			_, _ = a.Limiter.Allow(rctx, bytesKey, a.Bytes, -unused)
			cancel()
		}
		endLease()
	}, nil
}

// inFlightDenial describes a full in-flight limit: max slots, none free.
// When one frees is not known (leases end with their uploads), so the wait
// it suggests, and the time to a free slot, is one second.
func inFlightDenial(max int) Decision {
	return Decision{Limit: max, RetryAfter: time.Second, ResetAfter: time.Second}
}

func (a *UploadAdmission) leaseTTL() time.Duration {
	if a.LeaseTTL > 0 {
		return a.LeaseTTL
	}
	return time.Minute
}
