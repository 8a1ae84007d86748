package providers

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/policy/keys/seal"
)

// recordingProvider is a Provider that records what it was given and
// answers with err.
type recordingProvider struct {
	name    string
	key     string
	file    File
	body    string
	deleted string
	query   files.ProviderListQuery
	statted string
	read    string
	err     error
}

func (p *recordingProvider) Name() string { return p.name }

func (p *recordingProvider) Upload(_ context.Context, key seal.Secret, f File) (Uploaded, error) {
	p.key, p.file = key.Reveal(), f
	b, _ := io.ReadAll(f.Body)
	p.body = string(b)
	if p.err != nil {
		return Uploaded{}, p.err
	}
	return Uploaded{ID: "file-123", Bytes: int64(len(b))}, nil
}

func (p *recordingProvider) Delete(_ context.Context, key seal.Secret, id string) error {
	p.key, p.deleted = key.Reveal(), id
	return p.err
}

func (p *recordingProvider) List(_ context.Context, key seal.Secret, q files.ProviderListQuery) (files.ProviderPage, error) {
	p.key, p.query = key.Reveal(), q
	if p.err != nil {
		return files.ProviderPage{}, p.err
	}
	return files.ProviderPage{Files: []files.ProviderFileInfo{{ID: "file-123"}}, HasMore: true}, nil
}

func (p *recordingProvider) Stat(_ context.Context, key seal.Secret, id string) (files.ProviderFileInfo, error) {
	p.key, p.statted = key.Reveal(), id
	if p.err != nil {
		return files.ProviderFileInfo{}, p.err
	}
	return files.ProviderFileInfo{ID: id, Size: 2}, nil
}

func (p *recordingProvider) Content(_ context.Context, key seal.Secret, id string) (files.ProviderContent, error) {
	p.key, p.read = key.Reveal(), id
	if p.err != nil {
		return files.ProviderContent{}, p.err
	}
	return files.ProviderContent{Body: io.NopCloser(strings.NewReader("hi")), ContentType: "text/plain", Length: 2}, nil
}

// openBound opens plainKey, sealed for workspace ws-1, with a Keyring of
// the one provider rp, as the file service does.
func openBound(t *testing.T, rp *recordingProvider) files.Provider {
	t.Helper()
	sealer := testSealer(t, 3)
	sealed, err := sealer.Seal("ws-1", rp.name, seal.NewSecret(plainKey))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewKeyring(sealer, rp).Open("ws-1", rp.name, sealed)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestKeyringBindsTheWorkspacesKey(t *testing.T) {
	rp := &recordingProvider{name: ProviderOpenAI}
	p := openBound(t, rp)
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
	rp.key = ""
	q := files.ProviderListQuery{Limit: 7, AfterID: "file-1", Ascending: true}
	if page, err := p.List(t.Context(), q); err != nil || !page.HasMore || len(page.Files) != 1 || rp.query != q || rp.key != plainKey {
		t.Errorf("List = %+v, %v; provider got %+v with key %q", page, err, rp.query, rp.key)
	}
	rp.key = ""
	if info, err := p.Stat(t.Context(), "file-9"); err != nil || info.ID != "file-9" || rp.statted != "file-9" || rp.key != plainKey {
		t.Errorf("Stat = %+v, %v", info, err)
	}
	rp.key = ""
	c, err := p.Content(t.Context(), "file-8")
	if err != nil || rp.read != "file-8" || rp.key != plainKey {
		t.Fatalf("Content = %+v, %v", c, err)
	}
	if b, _ := io.ReadAll(c.Body); string(b) != "hi" || c.Length != 2 || c.ContentType != "text/plain" {
		t.Errorf("Content = %+v, body %q", c, b)
	}
	c.Body.Close()
}

func TestKeyringRefuses(t *testing.T) {
	sealer := testSealer(t, 3)
	ring := NewKeyring(sealer, &recordingProvider{name: ProviderOpenAI})
	sealedForOther, err := sealer.Seal("ws-2", ProviderOpenAI, seal.NewSecret(plainKey))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ring.Open("ws-1", ProviderAnthropic, sealedForOther); !errors.Is(err, files.ErrUnknownProvider) {
		t.Errorf("Open of a provider without a client = %v, want files.ErrUnknownProvider", err)
	}
	if _, err := ring.Open("ws-1", ProviderOpenAI, sealedForOther); !errors.Is(err, seal.ErrUnseal) || errors.Is(err, files.ErrUnknownProvider) {
		t.Errorf("Open of another workspace's key = %v, want seal.ErrUnseal", err)
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
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := openBound(t, &recordingProvider{name: ProviderOpenAI, err: tt.err})
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

// TestKeyringMapsReadErrors is the mapping resources.md gives the edge for
// provider files, as the service's sentinels.
func TestKeyringMapsReadErrors(t *testing.T) {
	pe := func(status int) *ProviderError {
		return &ProviderError{Provider: ProviderAnthropic, Op: "stat", Status: status, RetryAfter: 7 * time.Second}
	}
	sentinels := []error{files.ErrNotFound, files.ErrProviderRateLimited, files.ErrProvider, files.ErrProviderTimeout, files.ErrProviderRejected}
	tests := []struct {
		name       string
		err        error
		byID, list error // wanted for calls naming a file, and for List
	}{
		{"404", pe(404), files.ErrNotFound, files.ErrProvider},
		{"429", pe(429), files.ErrProviderRateLimited, files.ErrProviderRateLimited},
		{"401 refused key", pe(401), files.ErrProvider, files.ErrProvider},
		{"403 refused key", pe(403), files.ErrProvider, files.ErrProvider},
		{"400", pe(400), files.ErrProviderRejected, files.ErrProviderRejected},
		{"413", pe(413), files.ErrProviderRejected, files.ErrProviderRejected},
		{"500", pe(500), files.ErrProvider, files.ErrProvider},
		{"529", pe(529), files.ErrProvider, files.ErrProvider},
		{"redirect", pe(307), files.ErrProvider, files.ErrProvider},
		{"unreadable 200", pe(200), files.ErrProvider, files.ErrProvider},
		{"unreachable", &ProviderError{Provider: ProviderAnthropic, Op: "stat", Err: errors.New("refused")}, files.ErrProvider, files.ErrProvider},
		{"timeout", &ProviderError{Provider: ProviderAnthropic, Op: "stat", Timeout: true}, files.ErrProviderTimeout, files.ErrProviderTimeout},
		{"id no provider issues", ErrInvalidFileID, files.ErrNotFound, files.ErrNotFound},
		{"unsupported order", ErrUnsupportedQuery, files.ErrProviderRejected, files.ErrProviderRejected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := openBound(t, &recordingProvider{name: ProviderAnthropic, err: tt.err})
			_, listErr := p.List(t.Context(), files.ProviderListQuery{})
			_, statErr := p.Stat(t.Context(), "file_1")
			_, contentErr := p.Content(t.Context(), "file_1")
			for op, got := range map[string]error{"list": listErr, "stat": statErr, "content": contentErr, "delete": p.Delete(t.Context(), "file_1")} {
				want := tt.byID
				if op == "list" {
					want = tt.list
				}
				for _, s := range sentinels {
					if errors.Is(got, s) != (s == want) {
						t.Errorf("%s: %v: Is(%v) = %v, want only %v", op, got, s, !(s == want), want)
					}
				}
				var orig *ProviderError
				if _, ok := tt.err.(*ProviderError); ok && !errors.As(got, &orig) {
					t.Errorf("%s: %v lost the *ProviderError and its metadata", op, got)
				}
				var rl *files.RateLimitedError
				if errors.As(got, &rl) && (rl.RetryAfter != 7*time.Second || rl.Provider != ProviderAnthropic) {
					t.Errorf("%s: RateLimitedError %+v", op, rl)
				}
			}
		})
	}
}

const plainKey = "sk-live-0123456789abcdef"

func testSealer(t *testing.T, fill byte) *seal.Sealer {
	t.Helper()
	s, err := seal.NewSealer(bytes.Repeat([]byte{fill}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
