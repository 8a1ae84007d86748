package app

import (
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aigateway/gateway/policy/keys/seal"
)

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
