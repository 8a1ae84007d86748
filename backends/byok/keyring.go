package byok

import (
	"context"
	"errors"
	"fmt"

	"github.com/aigateway/gateway/files"
)

// Keyring is the upload service's way to a provider (files.Opener): it
// unseals a workspace's stored key and binds it to that provider's client.
// The plaintext key stays in this package, inside the bound client; the
// service only ever holds sealed bytes and an interface. A Keyring is safe
// for concurrent use.
type Keyring struct {
	sealer    *Sealer
	providers map[string]Provider
}

var _ files.Opener = (*Keyring)(nil)

// NewKeyring returns a Keyring opening keys sealed by sealer for the given
// providers, looked up by their Name.
func NewKeyring(sealer *Sealer, providers ...Provider) *Keyring {
	k := &Keyring{sealer: sealer, providers: make(map[string]Provider, len(providers))}
	for _, p := range providers {
		k.providers[p.Name()] = p
	}
	return k
}

// Open implements files.Opener. A key that does not open is ErrUnseal; a
// provider without a client is files.ErrUnknownProvider.
func (k *Keyring) Open(workspaceID, provider string, sealed []byte) (files.Provider, error) {
	p, ok := k.providers[provider]
	if !ok {
		return nil, fmt.Errorf("%w: no client for %q", files.ErrUnknownProvider, provider)
	}
	key, err := k.sealer.Open(workspaceID, provider, sealed)
	if err != nil {
		return nil, err
	}
	return boundProvider{p: p, key: key}, nil
}

// boundProvider is a Provider with one workspace's key.
type boundProvider struct {
	p   Provider
	key Secret
}

func (b boundProvider) Upload(ctx context.Context, f files.ProviderFile) (string, error) {
	up, err := b.p.Upload(ctx, b.key, File{Name: f.Name, ContentType: f.ContentType, Body: f.Body})
	if err != nil {
		return "", serviceError(err)
	}
	return up.ID, nil
}

func (b boundProvider) Delete(ctx context.Context, id string) error {
	return serviceError(b.p.Delete(ctx, b.key, id))
}

// The read side of provider files; the adapters grow it.
func (b boundProvider) List(context.Context, files.ProviderListQuery) (files.ProviderPage, error) {
	return files.ProviderPage{}, errNotYet
}

func (b boundProvider) Stat(context.Context, string) (files.ProviderFileInfo, error) {
	return files.ProviderFileInfo{}, errNotYet
}

func (b boundProvider) Content(context.Context, string) (files.ProviderContent, error) {
	return files.ProviderContent{}, errNotYet
}

var errNotYet = fmt.Errorf("%w: reading provider files is not wired yet", files.ErrUnknownProvider)

// serviceError adds the upload service's sentinel to a provider failure, so
// its classification needs nothing of this package; the *ProviderError (and
// its client-safe Metadata) stays reachable under it.
func serviceError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrProviderTimeout):
		return fmt.Errorf("%w: %w", files.ErrProviderTimeout, err)
	case errors.Is(err, ErrProvider):
		return fmt.Errorf("%w: %w", files.ErrProvider, err)
	default:
		return err
	}
}
