package files

import (
	"context"
	"errors"
	"io"
	"time"
)

// The BYOK providers an upload may go to, as named in the provider query
// parameter, the configuration and the metadata store.
const (
	ProviderAnthropic = "anthropic"
	ProviderOpenAI    = "openai"
)

// Providers lists every BYOK provider name, sorted. It is the one list the
// edge, the command line and the provider adapters check names against.
func Providers() []string { return []string{ProviderAnthropic, ProviderOpenAI} }

// IsProvider reports whether name is one of Providers.
func IsProvider(name string) bool { return name == ProviderAnthropic || name == ProviderOpenAI }

// ProviderFile is one file to send to a provider. Its size is not known in
// advance: Body is read once, to EOF, while the client's request is on the
// wire.
type ProviderFile struct {
	Name        string
	ContentType string
	Body        io.Reader
}

// Provider is one provider's Files API with one workspace's own key bound
// in. Implementations are safe for concurrent use and never log the key or
// put it in an error.
type Provider interface {
	// Upload streams f to the provider and returns the provider's file id.
	// It returns only once it has stopped reading f.Body.
	//
	// Errors: f.Body's own error, wrapped (so errors.As still finds e.g. a
	// *TooLargeError); ctx's error, wrapped; an error wrapping
	// ErrProviderTimeout when the provider did not answer in time; any other
	// failure of the provider (refusal, 5xx, unreachable) wrapping ErrProvider.
	// Errors may carry a Metadata() map safe to show the client.
	Upload(ctx context.Context, f ProviderFile) (id string, err error)
	// Delete removes the provider's file id. A file the provider does not
	// know is an error wrapping ErrNotFound; an upload being undone treats
	// that as done, so Delete can be retried. Errors as Upload.
	Delete(ctx context.Context, id string) error
	// List returns one page of the provider's files, in q.Order. Errors as
	// Upload, plus one wrapping ErrProviderRateLimited (a *RateLimitedError
	// carrying the provider's Retry-After) when the provider throttles.
	List(ctx context.Context, q ProviderListQuery) (ProviderPage, error)
	// Stat describes the provider's file id; unknown: ErrNotFound. Errors as
	// List.
	Stat(ctx context.Context, id string) (ProviderFileInfo, error)
	// Content streams the bytes of the provider's file id; the caller closes
	// Body. Unknown: ErrNotFound. Errors as List; reading Body may still fail.
	Content(ctx context.Context, id string) (ProviderContent, error)
}

// ErrProviderRateLimited: the provider answered 429. Returned as a
// *RateLimitedError; the edge answers 429 with its Retry-After.
var ErrProviderRateLimited = errors.New("provider rate limit exceeded")

// RateLimitedError is a provider's 429.
type RateLimitedError struct {
	Provider string
	// RetryAfter is the provider's Retry-After, zero when it sent none.
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string {
	return e.Provider + ": " + ErrProviderRateLimited.Error()
}

func (e *RateLimitedError) Unwrap() error { return ErrProviderRateLimited }

// RetryAfterSeconds is the provider's Retry-After rounded up to whole
// seconds, 0 when it sent none; the edge passes it on.
func (e *RateLimitedError) RetryAfterSeconds() int {
	return int((e.RetryAfter + time.Second - 1) / time.Second)
}

// ProviderListQuery asks a provider for one page of files.
type ProviderListQuery struct {
	// Limit is the page size, 1 to 1000; the adapter caps it at what the
	// provider accepts.
	Limit int
	// AfterID continues after this provider file id (in Order); BeforeID
	// pages backwards from it (Anthropic's before_id). At most one is set.
	AfterID, BeforeID string
	// Ascending lists oldest first; the default is newest first.
	Ascending bool
}

// ProviderPage is one page of a provider's files.
type ProviderPage struct {
	Files   []ProviderFileInfo
	HasMore bool
}

// ProviderFileInfo is a provider's description of one of its files.
type ProviderFileInfo struct {
	ID        string
	Filename  string
	MimeType  string // empty when the provider keeps none (OpenAI)
	Size      int64
	CreatedAt time.Time
	// Purpose is OpenAI's purpose; empty for Anthropic.
	Purpose string
	// Downloadable is what the provider says (Anthropic's downloadable;
	// OpenAI: true except for purpose user_data and assistants uploads, as
	// its API refuses those).
	Downloadable bool
}

// ProviderContent is the stream of a provider file's bytes.
type ProviderContent struct {
	Body        io.ReadCloser
	ContentType string // the provider's, or application/octet-stream
	Length      int64  // -1 when the provider did not say
}

// Opener turns a workspace's sealed provider key into a client of that
// provider bound to the key. The plaintext key stays inside the adapter: the
// upload service never holds it.
type Opener interface {
	// Open unseals sealed, the key workspaceID stored for provider, and
	// returns provider's client bound to it. Errors: one wrapping
	// ErrUnknownProvider when no client of that provider is configured; any
	// other when the key does not open (tampered with, sealed under another
	// key or for another workspace), which is the gateway's fault, not the
	// client's.
	Open(workspaceID, provider string, sealed []byte) (Provider, error)
}
