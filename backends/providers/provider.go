// Package providers works with model providers' Files APIs (upload, list,
// metadata, content, delete) with a workspace's own provider key ("bring
// your own key").
//
// Two pieces: Provider, implemented by Client (one per provider, made by
// NewOpenAI or NewAnthropic: the same HTTP machinery speaking each
// provider's dialect), which streams files both ways without buffering them; and Keyring, the adapter the
// file service sees (files.Opener): it unseals a workspace's key (sealed by
// policy/keys/seal) and binds it to a Provider, so the plaintext key never leaves
// this package. Client also speaks OpenAI's Uploads resource (Uploader,
// uploads.go), a file sent in parts, which the bound provider offers the
// file service as files.UploadProvider. The package knows nothing about
// HTTP routing or the store.
package providers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/policy/keys/seal"
	"go.uber.org/zap"
)

// Provider names: files.Providers is the one list.
const (
	ProviderOpenAI    = files.ProviderOpenAI
	ProviderAnthropic = files.ProviderAnthropic
)

// Errors of providers. The HTTP layer maps ErrProvider to 502 and
// ErrProviderTimeout to 504, showing only ProviderError.Metadata.
var (
	// ErrProvider: the provider answered with an error status (4xx, 5xx, or
	// a redirect, which is never followed), an unreadable answer, or could
	// not be reached (connection refused, DNS, TLS). Returned as a
	// *ProviderError.
	ErrProvider = errors.New("byok: provider error")
	// ErrProviderTimeout: the provider did not answer in time (response
	// header timeout, Options.Timeout, or the caller's context deadline).
	// Returned as a *ProviderError with Timeout set. It does not match
	// ErrProvider, so the two map to different statuses.
	ErrProviderTimeout = errors.New("byok: provider timed out")
	// ErrInvalidKey: the provider key is empty or contains characters that
	// cannot go in an HTTP header. Nothing was sent.
	ErrInvalidKey = seal.ErrInvalidKey
	// ErrInvalidFile: the file's name or content type cannot be sent in a
	// multipart header (empty name, control characters, malformed media
	// type). The HTTP layer validates names first; this is the last guard.
	ErrInvalidFile = errors.New("byok: file name or content type cannot be sent")
	// ErrUnknownProvider: New was given a name not in files.Providers.
	ErrUnknownProvider = errors.New("byok: unknown provider")
	// ErrInvalidFileID: the file id is not one a provider issues (empty,
	// too long, or with characters other than letters, digits, '_', '-',
	// '.'). Nothing was sent: no provider holds such a file.
	ErrInvalidFileID = errors.New("byok: not a provider file id")
	// ErrUnsupportedQuery: the provider cannot list files as asked (an order
	// it does not offer, after and before together, a paging id that is not
	// a file id). Nothing was sent.
	ErrUnsupportedQuery = errors.New("byok: the provider cannot list files this way")
)

// File is one file to upload. Its size is not known in advance: Body is read
// once, to EOF, while the request is on the wire.
type File struct {
	// Name is the filename sent to the provider.
	Name string
	// ContentType is the file's media type; empty means
	// application/octet-stream.
	ContentType string
	// Body is read exactly once. An error it returns (other than io.EOF)
	// aborts the upload, and Upload returns it wrapped, so errors.As still
	// finds e.g. an *http.MaxBytesError.
	Body io.Reader
}

// Uploaded is the provider's record of a stored file.
type Uploaded struct {
	// ID is the provider's file id (file-… for OpenAI, file_… for
	// Anthropic).
	ID string
	// Bytes is the size the provider reports.
	Bytes int64
	// CreatedAt is the provider's creation time, in UTC.
	CreatedAt time.Time
	// RequestID is the provider's request id of the upload.
	RequestID string
}

// Provider uploads files to one provider's Files API with a caller-supplied
// key. Implementations are safe for concurrent use; they keep connections
// to the provider alive between calls and never log the key or put it in
// an error.
type Provider interface {
	// Name is ProviderOpenAI or ProviderAnthropic.
	Name() string
	// Upload streams f to the provider with key and returns the provider's
	// file record. Memory use is a small fixed buffer whatever the size.
	//
	// Errors: *ProviderError (ErrProvider or ErrProviderTimeout) when the
	// provider refused, failed, redirected or did not answer; f.Body's own
	// error, wrapped, when reading the file failed (the request is aborted
	// mid-body, so the provider keeps nothing); the caller's context error,
	// wrapped, when ctx was cancelled; ErrInvalidKey or ErrInvalidFile when
	// nothing could be sent.
	//
	// Upload returns only once it has stopped reading f.Body.
	Upload(ctx context.Context, key seal.Secret, f File) (Uploaded, error)
	// Delete removes the provider's file id. A file the provider does not
	// know is its 404, a *ProviderError like any refusal; an id no provider
	// issues is ErrInvalidFileID. Errors otherwise as Upload.
	Delete(ctx context.Context, key seal.Secret, id string) error
	// List returns one page of the provider's files. ErrUnsupportedQuery
	// when the provider cannot page as asked; otherwise errors as Upload
	// (a 429's Retry-After is in ProviderError.RetryAfter).
	List(ctx context.Context, key seal.Secret, q files.ProviderListQuery) (files.ProviderPage, error)
	// Stat describes the provider's file id. Errors as Delete.
	Stat(ctx context.Context, key seal.Secret, id string) (files.ProviderFileInfo, error)
	// Content streams the bytes of the provider's file id: Body is the
	// provider's answer as it arrives, never buffered, and the caller
	// closes it. Options.Timeout runs until Body is closed; a failure while
	// reading Body is a *ProviderError too. Errors as Delete.
	Content(ctx context.Context, key seal.Secret, id string) (files.ProviderContent, error)
}

// Options configure a provider client. BaseURL and Timeout carry the
// meaning of providers.<name> in the config file.
type Options struct {
	// BaseURL is where the provider's API lives: for OpenAI the /v1 prefix
	// included (https://api.openai.com/v1), for Anthropic the host only
	// (https://api.anthropic.com). It must be https, except on a loopback
	// host (tests, local stand-ins): keys never cross a network in clear.
	BaseURL string
	// Timeout bounds one call as a whole: an Upload with its request body,
	// a Content until its Body is closed. Zero leaves only the caller's
	// context.
	Timeout time.Duration
	// ResponseHeaderTimeout bounds the wait for the provider's answer once
	// the whole request has been sent. Zero means DefaultResponseHeaderTimeout.
	ResponseHeaderTimeout time.Duration
	// DialTimeout and TLSHandshakeTimeout bound connection setup; zero means
	// DefaultDialTimeout.
	DialTimeout         time.Duration
	TLSHandshakeTimeout time.Duration
}

// Defaults of Options.
const (
	DefaultResponseHeaderTimeout = 2 * time.Minute
	DefaultDialTimeout           = 10 * time.Second
)

// New returns the provider called name (one of files.Providers), or
// ErrUnknownProvider. It is the factory of provider clients, as backend.Open
// is of buckets.
func New(name string, opts Options, log *zap.Logger) (Provider, error) {
	var d *dialect
	switch name {
	case ProviderOpenAI:
		d = &openAIDialect
	case ProviderAnthropic:
		d = &anthropicDialect
	default:
		return nil, fmt.Errorf("%w %q (want one of %v)", ErrUnknownProvider, name, files.Providers())
	}
	c, err := newClient(d, opts, log)
	if err != nil {
		// A nil interface, not one holding a nil *Client.
		return nil, err
	}
	return c, nil
}

// ProviderError is a call the provider refused or failed, or
// that never got an answer. Its fields are safe to show to the client: the
// provider's error message is not kept (it may echo the request) and is
// logged at debug level only.
type ProviderError struct {
	// Provider is the provider's name.
	Provider string
	// Op is "upload", "delete", "list", "stat" or "content".
	Op string
	// Status is the provider's HTTP status; 0 when there was no answer.
	Status int
	// RequestID is the provider's request id, when it sent one.
	RequestID string
	// Type is the provider's error type (e.g. "authentication_error"), when
	// it sent one.
	Type string
	// RetryAfter is the Retry-After of a 429, zero when it sent none.
	RetryAfter time.Duration
	// Timeout is set when the provider did not answer in time; the error
	// then matches ErrProviderTimeout instead of ErrProvider.
	Timeout bool
	// Err is the transport error when there was no answer. Its text is for
	// logs, never for clients; it never contains the key.
	Err error
}

// Error describes the failure without the provider's message or the key.
func (e *ProviderError) Error() string {
	msg := fmt.Sprintf("byok: %s %s", e.Provider, e.Op)
	switch {
	case e.Timeout:
		msg += ": timed out"
	case e.Status != 0:
		msg += fmt.Sprintf(": provider answered %d", e.Status)
	default:
		msg += ": provider unreachable"
	}
	if e.Type != "" {
		msg += " (" + e.Type + ")"
	}
	if e.RequestID != "" {
		msg += ", request id " + e.RequestID
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the sentinel (ErrProvider or ErrProviderTimeout) and the
// transport error, if any.
func (e *ProviderError) Unwrap() []error {
	sentinel := ErrProvider
	if e.Timeout {
		sentinel = ErrProviderTimeout
	}
	if e.Err == nil {
		return []error{sentinel}
	}
	return []error{sentinel, e.Err}
}

// Metadata is what a client may see: the provider, its status, error type
// and request id (so the client can quote it to the provider's support).
func (e *ProviderError) Metadata() map[string]any {
	m := map[string]any{"provider": e.Provider}
	if e.Status != 0 {
		m["provider_status"] = e.Status
	}
	if e.RequestID != "" {
		m["provider_request_id"] = e.RequestID
	}
	if e.Type != "" {
		m["provider_error_type"] = e.Type
	}
	if e.Timeout {
		m["reason"] = "timeout"
	}
	return m
}
