// Package remote holds what the backends on a remote object store (s3,
// gcs) share: the settings both have — bucket, endpoint, key prefix,
// request timeout, attempts — with their defaults and their checks, and the
// reading of a failed request (its HTTP status, or a transport failure) as
// one of blob's errors. Each backend keeps its own settings, its own client's
// error types and its own retry machinery.
//
// The location rules themselves (bucket, endpoint, prefix) are
// blob.LocationProblems, which the configuration loader applies too.
package remote

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/aigateway/gateway/files/blob"
)

// Defaults of the shared settings.
const (
	DefaultRequestTimeout = 30 * time.Second
	DefaultMaxAttempts    = 3
)

// SetDefaults fills the shared settings left zero with their defaults, and
// ends a non-empty prefix with a slash, so that the prefix "gateway" keeps
// the objects under "gateway/".
func SetDefaults(prefix *string, requestTimeout *time.Duration, maxAttempts *int) {
	if *requestTimeout == 0 {
		*requestTimeout = DefaultRequestTimeout
	}
	if *maxAttempts == 0 {
		*maxAttempts = DefaultMaxAttempts
	}
	if *prefix != "" && !strings.HasSuffix(*prefix, "/") {
		*prefix += "/"
	}
}

// Problems checks the shared settings, after SetDefaults, and returns a
// *blob.ConfigError for each problem, its field named under section ("s3"
// gives "s3.bucket"): the location's (blob.LocationProblems), attempts
// below one, and any of the backend's timeouts below zero.
func Problems(section, bucket, endpoint, prefix string, maxAttempts int, timeouts ...time.Duration) []error {
	errs := blob.LocationProblems(section, bucket, endpoint, prefix)
	bad := func(field, problem string) {
		errs = append(errs, &blob.ConfigError{Field: section + "." + field, Problem: problem})
	}
	for _, d := range timeouts {
		if d < 0 {
			bad("timeouts", "must not be negative")
			break
		}
	}
	if maxAttempts < 1 {
		bad("max_attempts", "must be at least 1")
	}
	return errs
}

// StatusError is the blob error an object store's HTTP status stands for,
// or nil when the status says nothing about the storage (another 4xx: a
// request of ours the store refused, an internal error). 401 and 403 are
// ErrAccessDenied, 404 ErrNotFound, and 408, 429 and every 5xx
// ErrUnavailable: the store is slow, throttling or failing, and a later
// try may succeed.
func StatusError(status int) error {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return blob.ErrAccessDenied
	case status == http.StatusNotFound:
		return blob.ErrNotFound
	case status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500:
		return blob.ErrUnavailable
	}
	return nil
}

// Unreachable reports whether err is a failure to reach the store or to
// hear its whole answer — refused, reset or broken connection, a network
// timeout, an answer cut short, a deadline passed — which makes the
// storage unavailable rather than the request wrong.
func Unreachable(err error) bool {
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
