package blob

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/aigateway/gateway/internal/outage"
)

// Errors every Bucket implementation wraps (with %w) so callers can tell
// failures apart with errors.Is, whatever the backend.
var (
	// ErrNotFound: no object under the key (Open, Stat).
	ErrNotFound = errors.New("object not found")
	// ErrAccessDenied: the storage refused the credentials or the operation.
	ErrAccessDenied = errors.New("storage access denied")
	// ErrUnavailable: the storage could not be reached or could not serve
	// the request right now (connection refused or reset, timeout, 5xx,
	// throttling, disk full, bucket closed). Retrying later may succeed, so
	// the HTTP layer answers 503 with Retry-After.
	// It wraps outage.ErrUnavailable, the one mark of a dependency that
	// is down.
	ErrUnavailable = fmt.Errorf("storage %w", outage.ErrUnavailable)
	// ErrInvalidKey: the key breaks the rules of ValidateKey.
	ErrInvalidKey = errors.New("invalid object key")
	// ErrSizeMismatch: the body was longer or shorter than the size passed
	// to Upload.
	ErrSizeMismatch = errors.New("body size differs from the declared size")
	// ErrInvalidConfig: a backend's configuration is unusable. Constructors
	// return every problem at once, joined, each naming its field.
	ErrInvalidConfig = errors.New("invalid storage configuration")
	// ErrInvalidCompose: the sources given to Compose break its rules (none,
	// more than MaxComposeSources, or the destination among them).
	ErrInvalidCompose = errors.New("invalid compose")
)

// MissingSourceError is a source of Compose that does not exist. It
// unwraps to ErrNotFound, so a Compose fails like an Open of that source,
// and names the key so the caller can say which part is missing.
type MissingSourceError struct {
	Key string
}

func (e *MissingSourceError) Error() string {
	return fmt.Sprintf("compose source %q not found", e.Key)
}

// Unwrap returns ErrNotFound.
func (e *MissingSourceError) Unwrap() error { return ErrNotFound }

// KeyError is a key refused by ValidateKey. It unwraps to ErrInvalidKey.
// Keys are made by the gateway, so this is a programming error, not a
// client error, and it carries no client-facing metadata.
type KeyError struct {
	Key    string
	Reason string
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("invalid object key %q: %s", e.Key, e.Reason)
}

// Unwrap returns ErrInvalidKey.
func (e *KeyError) Unwrap() error { return ErrInvalidKey }

// SizeError is a body whose length differs from the size given to Upload.
// It unwraps to ErrSizeMismatch.
type SizeError struct {
	Declared int64
	// Received is how many bytes were read before the mismatch was seen:
	// fewer than Declared for a short body, Declared+1 (at least) for a long
	// one, since reading stops right past the declared size.
	Received int64
}

func (e *SizeError) Error() string {
	if e.Received > e.Declared {
		return "body longer than the declared " + strconv.FormatInt(e.Declared, 10) + " bytes"
	}
	return fmt.Sprintf("body ended after %d of the declared %d bytes", e.Received, e.Declared)
}

// Unwrap returns ErrSizeMismatch.
func (e *SizeError) Unwrap() error { return ErrSizeMismatch }

// Metadata is safe to show to the client that sent the body.
func (e *SizeError) Metadata() map[string]any {
	return map[string]any{"declared_bytes": e.Declared, "received_bytes": e.Received}
}

// ConfigError is one problem of a backend configuration. It unwraps to
// ErrInvalidConfig.
type ConfigError struct {
	Field   string // e.g. "s3.bucket"
	Problem string
}

func (e *ConfigError) Error() string { return e.Field + ": " + e.Problem }

// Unwrap returns ErrInvalidConfig.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// Classify wraps err, a client library's error, into the sentinel that
// sentinel finds for it (nil: none), keeping err reachable with errors.As.
// A cancelled context passes through unchanged: it is the caller's doing,
// not the storage's.
func Classify(err error, sentinel func(error) error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return err
	}
	if s := sentinel(err); s != nil {
		return fmt.Errorf("%w: %w", s, err)
	}
	return err
}

// ClassifyWrite is Classify for writes, where a 404 (a missing bucket) is a
// misconfiguration, not the caller's "no such object".
func ClassifyWrite(err error, sentinel func(error) error) error {
	return Classify(err, func(err error) error {
		if s := sentinel(err); s != ErrNotFound {
			return s
		}
		return nil
	})
}

// LocationProblems checks where an object-store backend keeps its objects —
// a bucket name, an optional http(s) endpoint and an optional key prefix —
// and returns a *ConfigError for each problem, fields named under section.
func LocationProblems(section, bucket, endpoint, prefix string) []error {
	var errs []error
	bad := func(field, problem string) {
		errs = append(errs, &ConfigError{Field: section + "." + field, Problem: problem})
	}
	if bucket == "" {
		bad("bucket", "must be set")
	} else if strings.ContainsAny(bucket, "/ ") {
		bad("bucket", "must be a bucket name, not a path")
	}
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("endpoint", "must be an http:// or https:// URL")
		}
	}
	if prefix != "" {
		if err := ValidateKey(strings.TrimSuffix(prefix, "/")); err != nil {
			bad("prefix", "must be a relative path of plain segments")
		}
	}
	return errs
}
