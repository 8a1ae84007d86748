package providers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/policy/keys/seal"
)

// Keyring is the upload service's way to a provider (files.Opener): it
// unseals a workspace's stored key and binds it to that provider's client.
// The plaintext key stays in this package, inside the bound client; the
// service only ever holds sealed bytes and an interface. A Keyring is safe
// for concurrent use.
type Keyring struct {
	sealer    *seal.Sealer
	providers map[string]Provider
}

var _ files.Opener = (*Keyring)(nil)

// NewKeyring returns a Keyring opening keys sealed by sealer for the given
// providers, looked up by their Name.
func NewKeyring(sealer *seal.Sealer, providers ...Provider) *Keyring {
	k := &Keyring{sealer: sealer, providers: make(map[string]Provider, len(providers))}
	for _, p := range providers {
		k.providers[p.Name()] = p
	}
	return k
}

// Open implements files.Opener. A key that does not open is seal.ErrUnseal; a
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
	key seal.Secret
}

func (b boundProvider) Upload(ctx context.Context, f files.ProviderFile) (string, error) {
	up, err := b.p.Upload(ctx, b.key, File{Name: f.Name, ContentType: f.ContentType, Body: f.Body})
	if err != nil {
		return "", serviceError(err)
	}
	return up.ID, nil
}

// Delete removes a provider file; one the provider does not know is
// files.ErrNotFound, which an upload being undone counts as done.
func (b boundProvider) Delete(ctx context.Context, id string) error {
	return readError(b.p.Delete(ctx, b.key, id), true)
}

func (b boundProvider) List(ctx context.Context, q files.ProviderListQuery) (files.ProviderPage, error) {
	page, err := b.p.List(ctx, b.key, q)
	return page, readError(err, false)
}

func (b boundProvider) Stat(ctx context.Context, id string) (files.ProviderFileInfo, error) {
	info, err := b.p.Stat(ctx, b.key, id)
	return info, readError(err, true)
}

func (b boundProvider) Content(ctx context.Context, id string) (files.ProviderContent, error) {
	c, err := b.p.Content(ctx, b.key, id)
	return c, readError(err, true)
}

// readError maps a failure of a call naming a provider file (byID) or
// listing them to the service's sentinels, as resources.md has the edge
// answer them: a file the provider does not know is ErrNotFound; its 429 a
// *files.RateLimitedError; a refused key (401, 403) ErrProvider, since it
// is the workspace's stored key that is wrong, not the caller; any other 4xx
// ErrProviderRejected, the caller's request being at fault; the rest as
// serviceError. The *ProviderError stays reachable for its metadata. A 404
// to a list names no file: the provider's API is not where it should be.
func readError(err error, byID bool) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrInvalidFileID) {
		return fmt.Errorf("%w: %w", files.ErrNotFound, err)
	}
	if errors.Is(err, ErrUnsupportedQuery) {
		return fmt.Errorf("%w: %w", files.ErrProviderRejected, err)
	}
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Timeout {
		return serviceError(err)
	}
	switch s := pe.Status; {
	case s == http.StatusNotFound && byID:
		return fmt.Errorf("%w: %w", files.ErrNotFound, err)
	case s == http.StatusTooManyRequests:
		return fmt.Errorf("%w: %w", &files.RateLimitedError{Provider: pe.Provider, RetryAfter: pe.RetryAfter}, err)
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		return fmt.Errorf("%w: %w", files.ErrProvider, err)
	case s >= 400 && s <= 499 && s != http.StatusNotFound:
		return fmt.Errorf("%w: %w", files.ErrProviderRejected, err)
	}
	return serviceError(err)
}

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

var _ files.UploadProvider = boundProvider{}

// uploader is b's provider's Uploads resource, or ErrNoUploads.
func (b boundProvider) uploader() (Uploader, error) {
	if u, ok := b.p.(Uploader); ok {
		return u, nil
	}
	return nil, ErrNoUploads
}

func (b boundProvider) CreateUpload(ctx context.Context, r files.ProviderUploadRequest) (files.ProviderUpload, error) {
	u, err := b.uploader()
	if err != nil {
		return files.ProviderUpload{}, uploadError(err)
	}
	up, err := u.CreateUpload(ctx, b.key, UploadRequest{Bytes: r.Bytes, Filename: r.Filename, MimeType: r.MimeType, Purpose: string(r.Purpose)})
	if err != nil {
		return files.ProviderUpload{}, uploadError(err)
	}
	return files.ProviderUpload{ID: up.ID, ExpiresAt: up.ExpiresAt, File: up.File}, nil
}

func (b boundProvider) AddUploadPart(ctx context.Context, id string, data io.Reader) (files.ProviderUploadPart, error) {
	u, err := b.uploader()
	if err != nil {
		return files.ProviderUploadPart{}, uploadError(err)
	}
	p, err := u.AddUploadPart(ctx, b.key, id, data)
	if err != nil {
		return files.ProviderUploadPart{}, uploadError(err)
	}
	return files.ProviderUploadPart{ID: p.ID, CreatedAt: p.CreatedAt}, nil
}

func (b boundProvider) CompleteUpload(ctx context.Context, id string, partIDs []string, md5 string) (files.ProviderUpload, error) {
	u, err := b.uploader()
	if err != nil {
		return files.ProviderUpload{}, uploadError(err)
	}
	up, err := u.CompleteUpload(ctx, b.key, id, partIDs, md5)
	if err != nil {
		return files.ProviderUpload{}, uploadError(err)
	}
	return files.ProviderUpload{ID: up.ID, ExpiresAt: up.ExpiresAt, File: up.File}, nil
}

func (b boundProvider) CancelUpload(ctx context.Context, id string) (files.ProviderUpload, error) {
	u, err := b.uploader()
	if err != nil {
		return files.ProviderUpload{}, uploadError(err)
	}
	up, err := u.CancelUpload(ctx, b.key, id)
	if err != nil {
		return files.ProviderUpload{}, uploadError(err)
	}
	return files.ProviderUpload{ID: up.ID, ExpiresAt: up.ExpiresAt, File: up.File}, nil
}

// uploadError maps a failure of the Uploads resource as readError maps a
// read's, except that the provider's 404 is a refusal too (400 with the
// provider's status): the gateway recorded the upload, so the provider not
// knowing it (expired there, or made with another of the workspace's
// keys) is not the upload's absence. An upload id no provider issues is
// the gateway's ErrUploadNotFound.
func uploadError(err error) error {
	var pe *ProviderError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrInvalidFileID):
		return fmt.Errorf("%w: %w", files.ErrUploadNotFound, err)
	case errors.Is(err, ErrNoUploads):
		return fmt.Errorf("%w: %w", files.ErrProviderRejected, err)
	case errors.As(err, &pe) && !pe.Timeout && pe.Status == http.StatusNotFound:
		return fmt.Errorf("%w: %w", files.ErrProviderRejected, err)
	}
	return readError(err, false)
}
