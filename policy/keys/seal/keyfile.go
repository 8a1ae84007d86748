package seal

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// KeyEnv is the environment variable holding the sealing key: base64 of
// KeySize random bytes (e.g. `openssl rand -base64 32`).
const KeyEnv = "GATEWAY_BYOK_ENCRYPTION_KEY"

// KeyFileName is the file under the data directory that holds a generated
// sealing key when KeyEnv is unset.
const KeyFileName = "byok.key"

// ErrBadSealingKey: the sealing key in KeyEnv or in the key file is not
// base64 of KeySize bytes. Its messages never contain the value.
var ErrBadSealingKey = errors.New("byok: sealing key is malformed")

// LoadKey returns the key that seals provider keys at rest.
//
// When getenv(KeyEnv) is set it must be base64 (standard or URL alphabet,
// padded or not) of exactly KeySize bytes; anything else is
// ErrBadSealingKey, and the error never echoes the value.
//
// When it is unset, the key lives in <dataDir>/byok.key: the first call
// generates it and logs a warning (losing the file makes every stored
// provider key unreadable, so it must be backed up with the database); later
// calls, and other processes sharing the directory, read the same key. The
// file is written completely to a temporary file opened with O_EXCL and mode
// 0600, then hard-linked into place, which fails when the name exists: of
// two processes racing, exactly one key wins and the loser reads it, and no
// reader can see a half-written file. The file system must support hard
// links (every local POSIX one does).
func LoadKey(getenv func(string) string, dataDir string, log *slog.Logger) ([]byte, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if v := strings.TrimSpace(getenv(KeyEnv)); v != "" {
		key, ok := decodeKey(v)
		if !ok {
			return nil, fmt.Errorf("%w: %s must be base64 of %d bytes", ErrBadSealingKey, KeyEnv, KeySize)
		}
		return key, nil
	}
	if dataDir == "" {
		return nil, fmt.Errorf("byok: %s is unset and there is no data directory to keep a generated key in", KeyEnv)
	}
	path := filepath.Join(dataDir, KeyFileName)
	key, err := readKeyFile(path, log)
	if err == nil {
		log.Info("BYOK sealing key loaded from file", slog.String("path", path))
		return key, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	created, err := createKeyFile(dataDir, path)
	if err != nil {
		return nil, err
	}
	if !created {
		// Another process created it between our read and our link.
		return readKeyFile(path, log)
	}
	log.Warn("BYOK sealing key generated: "+KeyEnv+" is unset; back this file up with the database, "+
		"losing it makes every stored provider key unreadable", slog.String("path", path))
	return readKeyFile(path, log)
}

func decodeKey(v string) ([]byte, bool) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if key, err := enc.DecodeString(v); err == nil && len(key) == KeySize {
			return key, true
		}
	}
	return nil, false
}

func readKeyFile(path string, log *slog.Logger) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("byok: reading sealing key: %w", err)
	}
	key, ok := decodeKey(strings.TrimSpace(string(b)))
	if !ok {
		return nil, fmt.Errorf("%w: %s must hold base64 of %d bytes", ErrBadSealingKey, path, KeySize)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		log.Warn("BYOK sealing key file is readable by others; chmod 600 it", slog.String("path", path),
			slog.String("mode", fi.Mode().Perm().String()))
	}
	return key, nil
}

// createKeyFile writes a fresh key to path unless it exists. It reports
// whether this call created the file.
func createKeyFile(dir, path string) (created bool, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("byok: creating data directory: %w", err)
	}
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return false, fmt.Errorf("byok: generating sealing key: %w", err)
	}
	// CreateTemp opens with O_CREATE|O_EXCL and mode 0600.
	tmp, err := os.CreateTemp(dir, ".byok.key.*")
	if err != nil {
		return false, fmt.Errorf("byok: writing sealing key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(base64.StdEncoding.EncodeToString(key) + "\n"); err != nil {
		tmp.Close()
		return false, fmt.Errorf("byok: writing sealing key: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return false, fmt.Errorf("byok: writing sealing key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return false, fmt.Errorf("byok: writing sealing key: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		return false, fmt.Errorf("byok: installing sealing key: %w", err)
	}
	// Make the new name durable before anything is sealed with the key.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return true, nil
}
