package seal

import (
	"bytes"
	"encoding/base64"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap/exp/zapslog"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadKeyFromEnv(t *testing.T) {
	raw := bytes.Repeat([]byte{0xfb, 0xef}, KeySize/2) // encodes differently in the two alphabets
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		v := enc.EncodeToString(raw)
		t.Run(v, func(t *testing.T) {
			dir := t.TempDir()
			got, err := LoadKey(env(map[string]string{KeyEnv: " " + v + "\n"}), dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, raw) {
				t.Fatal("wrong key")
			}
			if _, err := os.Stat(filepath.Join(dir, KeyFileName)); !errors.Is(err, os.ErrNotExist) {
				t.Fatal("a key file was written although the environment holds the key")
			}
		})
	}
}

func TestLoadKeyBadEnvDoesNotEcho(t *testing.T) {
	tests := map[string]string{
		"not base64":   "this-is-not-base64-$ecretValue!!",
		"16 bytes":     base64.StdEncoding.EncodeToString([]byte("0123456789abcdef")),
		"33 bytes":     base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("k"), 33)),
		"hex of 32":    strings.Repeat("ab", 32),
		"base64 space": "AAAA AAAA",
	}
	for name, v := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := LoadKey(env(map[string]string{KeyEnv: v}), t.TempDir(), nil)
			if !errors.Is(err, ErrBadSealingKey) {
				t.Fatalf("err = %v, want ErrBadSealingKey", err)
			}
			if strings.Contains(err.Error(), v) || strings.Contains(err.Error(), v[:8]) {
				t.Fatalf("error echoes the value: %v", err)
			}
			if !strings.Contains(err.Error(), KeyEnv) {
				t.Fatalf("error should name %s: %v", KeyEnv, err)
			}
		})
	}
}

func TestLoadKeyGeneratesOnceAndReuses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data") // does not exist yet
	core, logs := observer.New(zapcore.InfoLevel)
	log := slog.New(zapslog.NewHandler(core))

	first, err := LoadKey(env(nil), dir, log)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != KeySize {
		t.Fatalf("key of %d bytes", len(first))
	}
	path := filepath.Join(dir, KeyFileName)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	if n := logs.FilterLevelExact(zapcore.WarnLevel).FilterMessageSnippet("generated").Len(); n != 1 {
		t.Fatalf("want one warning about the generated key, got %d", n)
	}

	second, err := LoadKey(env(nil), dir, log)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Fatal("second call generated another key")
	}
	if n := logs.FilterLevelExact(zapcore.WarnLevel).Len(); n != 1 {
		t.Fatalf("reuse warned again: %d warnings", n)
	}
	for _, e := range logs.All() {
		if strings.Contains(e.Message, base64.StdEncoding.EncodeToString(first)) {
			t.Fatal("the key was logged")
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("the data directory holds %d entries, want only %s", len(entries), KeyFileName)
	}
}

func TestLoadKeyConcurrentCallersAgree(t *testing.T) {
	dir := t.TempDir()
	core, logs := observer.New(zapcore.WarnLevel)
	const n = 16
	keys := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { keys[i], errs[i] = LoadKey(env(nil), dir, slog.New(zapslog.NewHandler(core))) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("caller %d got another key", i)
		}
	}
	if got := logs.FilterMessageSnippet("generated").Len(); got != 1 {
		t.Fatalf("%d callers claim to have generated the key, want 1", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %d entries", len(entries))
	}
}

func TestLoadKeyFileProblems(t *testing.T) {
	t.Run("malformed file", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, KeyFileName), []byte("short\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadKey(env(nil), dir, nil); !errors.Is(err, ErrBadSealingKey) {
			t.Fatalf("err = %v, want ErrBadSealingKey", err)
		}
	})
	t.Run("readable by others warns", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, KeyFileName)
		if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(make([]byte, KeySize))), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
		core, logs := observer.New(zapcore.WarnLevel)
		if _, err := LoadKey(env(nil), dir, slog.New(zapslog.NewHandler(core))); err != nil {
			t.Fatal(err)
		}
		if logs.FilterMessageSnippet("readable by others").Len() != 1 {
			t.Fatal("no warning about the file mode")
		}
	})
	t.Run("no data directory", func(t *testing.T) {
		if _, err := LoadKey(env(nil), "", nil); err == nil {
			t.Fatal("want an error without a data directory")
		}
	})
}
