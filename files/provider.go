package files

import (
	"context"
	"io"
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
	// Delete removes the provider's file id, to undo an upload whose record
	// could not be written. A file the provider does not know counts as
	// deleted, so Delete can be retried. Errors as Upload.
	Delete(ctx context.Context, id string) error
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
