package policy

import (
	"context"
	"errors"
	"time"
)

// Errors of admission. The HTTP layer answers 429 with Retry-After.
var (
	// ErrRateLimited: a request or upload limit denied the request now.
	ErrRateLimited = errors.New("rate limit exceeded")
	// ErrTooManyUploads: the key already has its maximum of uploads in flight.
	ErrTooManyUploads = errors.New("too many uploads in flight for this key")
)

// LimitedError is a denial by a limit, carrying the decision for the
// response's Retry-After and RateLimit-* headers.
type LimitedError struct {
	Decision Decision
	// Reason names the limit for the client ("rate", "upload_bytes", ...).
	Reason string
	err    error
}

func (e *LimitedError) Error() string { return e.err.Error() + " (" + e.Reason + ")" }

// Unwrap returns ErrRateLimited or ErrTooManyUploads.
func (e *LimitedError) Unwrap() error { return e.err }

// RetryAfterSeconds is the whole seconds to wait, at least 1.
func (e *LimitedError) RetryAfterSeconds() int {
	return int(max(ceilSeconds(e.Decision.RetryAfter), 1))
}

// Metadata names the limit that denied.
func (e *LimitedError) Metadata() map[string]any {
	return map[string]any{"limit": e.Reason}
}

// Denied returns the error of a denying decision of the named limit.
func Denied(d Decision, reason string) *LimitedError {
	return &LimitedError{Decision: d, Reason: reason, err: ErrRateLimited}
}

// UploadAdmission applies the fleet-wide limits of uploads, beyond the
// per-key request rate the HTTP layer checks: the upload rate per
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
// the whole byte budget — no wait would help, so the answer is 413 — and a
// *LimitedError when a limit denies now. release must be called exactly once
// with the bytes actually stored (0 on failure): it refunds the unused part
// of the declared size and ends the lease.
func (a *UploadAdmission) Admit(ctx context.Context, keyID, workspaceID string, declared int64) (release func(actual int64), err error) {
	endLease := func() {}
	if a.InFlight != nil && a.MaxInFlight > 0 {
		var ok bool
		endLease, ok, err = a.InFlight.Acquire(ctx, "uploads:key:"+keyID, a.MaxInFlight, a.leaseTTL())
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, &LimitedError{Decision: Decision{RetryAfter: time.Second}, Reason: "uploads_in_flight", err: ErrTooManyUploads}
		}
	}
	bytesKey := "upload_bytes:ws:" + workspaceID
	charged := max(declared, 1)
	checks := []Check{{Key: bytesKey, Limit: a.Bytes, Cost: charged}}
	reasons := []string{"upload_bytes"}
	if a.Files != (Limit{}) {
		checks = append(checks, Check{Key: "files:ws:" + workspaceID, Limit: a.Files, Cost: 1})
		reasons = append(reasons, "files")
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

func (a *UploadAdmission) leaseTTL() time.Duration {
	if a.LeaseTTL > 0 {
		return a.LeaseTTL
	}
	return time.Minute
}
