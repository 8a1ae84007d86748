package byok

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/aigateway/gateway/files"
)

// recordingProvider is a Provider that records what it was given and
// answers with err.
type recordingProvider struct {
	name    string
	key     string
	file    File
	body    string
	deleted string
	err     error
}

func (p *recordingProvider) Name() string { return p.name }

func (p *recordingProvider) Upload(_ context.Context, key Secret, f File) (Uploaded, error) {
	p.key, p.file = key.Reveal(), f
	b, _ := io.ReadAll(f.Body)
	p.body = string(b)
	if p.err != nil {
		return Uploaded{}, p.err
	}
	return Uploaded{ID: "file-123", Bytes: int64(len(b))}, nil
}

func (p *recordingProvider) Delete(_ context.Context, key Secret, id string) error {
	p.key, p.deleted = key.Reveal(), id
	return p.err
}

func TestKeyringBindsTheWorkspacesKey(t *testing.T) {
	sealer := testSealer(t, 3)
	rp := &recordingProvider{name: ProviderOpenAI}
	ring := NewKeyring(sealer, rp)
	sealed, err := sealer.Seal("ws-1", ProviderOpenAI, NewSecret(plainKey))
	if err != nil {
		t.Fatal(err)
	}
	p, err := ring.Open("ws-1", ProviderOpenAI, sealed)
	if err != nil {
		t.Fatal(err)
	}
	id, err := p.Upload(t.Context(), files.ProviderFile{Name: "a.txt", ContentType: "text/plain", Body: strings.NewReader("hi")})
	if err != nil || id != "file-123" {
		t.Fatalf("Upload = %q, %v", id, err)
	}
	if rp.key != plainKey || rp.file.Name != "a.txt" || rp.file.ContentType != "text/plain" || rp.body != "hi" {
		t.Errorf("provider got key %q, file %+v, body %q", rp.key, rp.file, rp.body)
	}
	if err := p.Delete(t.Context(), "file-123"); err != nil || rp.deleted != "file-123" {
		t.Errorf("Delete = %v, deleted %q", err, rp.deleted)
	}
}

func TestKeyringRefuses(t *testing.T) {
	sealer := testSealer(t, 3)
	ring := NewKeyring(sealer, &recordingProvider{name: ProviderOpenAI})
	sealedForOther, err := sealer.Seal("ws-2", ProviderOpenAI, NewSecret(plainKey))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ring.Open("ws-1", ProviderAnthropic, sealedForOther); !errors.Is(err, files.ErrUnknownProvider) {
		t.Errorf("Open of a provider without a client = %v, want files.ErrUnknownProvider", err)
	}
	if _, err := ring.Open("ws-1", ProviderOpenAI, sealedForOther); !errors.Is(err, ErrUnseal) || errors.Is(err, files.ErrUnknownProvider) {
		t.Errorf("Open of another workspace's key = %v, want ErrUnseal", err)
	}
}

func TestKeyringClassifiesProviderErrors(t *testing.T) {
	bodyErr := errors.New("client went away")
	tests := []struct {
		name string
		err  error
		want error
		not  error
	}{
		{"timeout", &ProviderError{Provider: ProviderOpenAI, Op: "upload", Timeout: true}, files.ErrProviderTimeout, files.ErrProvider},
		{"refused", &ProviderError{Provider: ProviderOpenAI, Op: "upload", Status: 500}, files.ErrProvider, files.ErrProviderTimeout},
		{"the body's own error", bodyErr, bodyErr, files.ErrProvider},
	}
	sealer := testSealer(t, 3)
	sealed, err := sealer.Seal("ws-1", ProviderOpenAI, NewSecret(plainKey))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewKeyring(sealer, &recordingProvider{name: ProviderOpenAI, err: tt.err}).Open("ws-1", ProviderOpenAI, sealed)
			if err != nil {
				t.Fatal(err)
			}
			for op, err := range map[string]error{
				"upload": func() error {
					_, err := p.Upload(t.Context(), files.ProviderFile{Name: "a", Body: strings.NewReader("x")})
					return err
				}(),
				"delete": p.Delete(t.Context(), "file-1"),
			} {
				if !errors.Is(err, tt.want) || errors.Is(err, tt.not) {
					t.Errorf("%s: %v, want %v and not %v", op, err, tt.want, tt.not)
				}
				var pe *ProviderError
				if _, isProvider := tt.err.(*ProviderError); isProvider && !errors.As(err, &pe) {
					t.Errorf("%s: %v lost the *ProviderError and its metadata", op, err)
				}
			}
		})
	}
}
