package app

import (
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aigateway/gateway/backends/providers"
	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/keys/seal"
	"github.com/aigateway/gateway/workspace"
	"github.com/google/uuid"
)

// ErrBadWorkspaceID: a workspace was named by something other than a UUID.
var ErrBadWorkspaceID = errors.New("workspace must be a workspace UUID")

// SetProviderKey stores workspaceID's own key for provider, sealed with the
// BYOK encryption key. It replaces a key stored before.
func (rt *Runtime) SetProviderKey(ctx context.Context, workspaceID, provider string, secret seal.Secret) error {
	id, err := uuid.Parse(workspaceID)
	if err != nil {
		return ErrBadWorkspaceID
	}
	if !files.IsProvider(provider) {
		return fmt.Errorf("%w %q", providers.ErrUnknownProvider, provider)
	}
	if secret.Reveal() == "" {
		return providers.ErrInvalidKey
	}
	sealer, err := rt.sealer()
	if err != nil {
		return err
	}
	sealed, err := sealer.Seal(id.String(), provider, secret)
	if err != nil {
		return err
	}
	err = rt.store.PutProviderKey(ctx, id.String(), provider, sealed, keys.MaskSecret(secret.Reveal()))
	switch {
	case errors.Is(err, workspace.ErrNotFound):
		return fmt.Errorf("workspace %s does not exist", id)
	case err != nil:
		return fmt.Errorf("store key: %w", err)
	}
	return nil
}

// sealer loads the key that seals BYOK provider keys at rest. On the
// embedded default a key is generated once beside the SQLite database;
// replicas sharing PostgreSQL must all be given the same key.
func (rt *Runtime) sealer() (*seal.Sealer, error) {
	key, err := rt.sealingKey()
	if err != nil {
		return nil, err
	}
	return seal.NewSealer(key)
}

// sealingKey is the key behind sealer. Other server secrets are derived
// from it (fileCursorKey), so a deployment has one secret to keep.
func (rt *Runtime) sealingKey() ([]byte, error) {
	dataDir := ""
	if rt.Config.Metadata.Driver == "sqlite" {
		dataDir = filepath.Dir(rt.Config.Metadata.DSN)
		if err := os.MkdirAll(dataDir, 0o750); err != nil {
			return nil, fmt.Errorf("data directory: %w", err)
		}
	}
	return seal.LoadKey(rt.getenv, dataDir, slogOf(rt.Log))
}

// fileCursorKey signs the cursors of file listings. It is derived from the
// sealing key with HKDF under its own label, so every replica given the
// same sealing key accepts the others' cursors, and a cursor's tag says
// nothing about the sealing key.
func fileCursorKey(sealingKey []byte) ([]byte, error) {
	return hkdf.Key(sha256.New, sealingKey, nil, "gateway files list cursor v1", 32)
}
