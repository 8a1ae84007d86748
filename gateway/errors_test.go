package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/files/blob"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/limits"
	"go.uber.org/zap"
)

// failingReader returns data, then err.
type failingReader struct {
	data []byte
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) > 0 {
		n := copy(p, f.data)
		f.data = f.data[n:]
		return n, nil
	}
	return 0, f.err
}

// TestBodyReaderClassifiesFailures: what went wrong with the client's
// connection decides the answer — never a 500 for the client's doing.
func TestBodyReaderClassifiesFailures(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		limit  int64
		status int // 0: the client is gone, nothing is answered
	}{
		{"body stopped arriving", fmt.Errorf("read tcp: %w", os.ErrDeadlineExceeded), 1 << 20, http.StatusRequestTimeout},
		{"connection reset", &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}, 1 << 20, 0},
		{"closed mid-body", io.ErrUnexpectedEOF, 1 << 20, 0},
		{"malformed chunked framing", errors.New("malformed chunked encoding"), 1 << 20, http.StatusBadRequest},
		{"over the limit", io.EOF, 3, http.StatusRequestEntityTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/", &failingReader{data: []byte("hello"), err: tc.err})
			b := newBodyReader(httptest.NewRecorder(), req, tc.limit)
			_, err := io.ReadAll(b)
			if err == nil {
				t.Fatal("no error")
			}
			if tc.status == 0 {
				if !errors.Is(err, errClientGone) {
					t.Errorf("err = %v, want errClientGone", err)
				}
				return
			}
			if status, _ := classify(err); status != tc.status {
				t.Errorf("status = %d for %v, want %d", status, err, tc.status)
			}
			if _, again := b.Read(make([]byte, 1)); again != err {
				t.Errorf("a second read gave %v, want the first failure again", again)
			}
		})
	}
}

// TestOutageIsServiceUnavailable: a backend out of reach, whichever it is
// and however deep it is wrapped, is a 503 with Retry-After in the
// envelope, never a 500.
func TestOutageIsServiceUnavailable(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("create workspace: %w: dial tcp: connection refused", blob.ErrUnavailable),
		fmt.Errorf("commit: %w", fmt.Errorf("%w: %w", files.ErrStorageUnavailable, blob.ErrUnavailable)),
		fmt.Errorf("admit: %w", limits.ErrLimiterUnavailable),
	} {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/workspaces", nil)
		rec := httptest.NewRecorder()
		writeError(rec, req, zap.NewNop(), err)
		if rec.Code != http.StatusServiceUnavailable {
			t.Errorf("%v: status %d, want 503", err, rec.Code)
		}
		if rec.Header().Get("Retry-After") == "" {
			t.Errorf("%v: no Retry-After", err)
		}
		var env envelope
		if jerr := json.Unmarshal(rec.Body.Bytes(), &env); jerr != nil || env.Error.Code != 503 || env.Error.Message != msgUnavailable {
			t.Errorf("%v: body %q", err, rec.Body.String())
		}
	}
}

// TestProviderAnswersMapped: what a provider said about a read or delete of
// its files reaches the client as resources.md says: its 429 with its
// Retry-After, a refused request as 400 with the provider's status only.
func TestProviderAnswersMapped(t *testing.T) {
	limited := &files.RateLimitedError{Provider: "openai", RetryAfter: 1500 * time.Millisecond}
	rejected := fmt.Errorf("list: %w: %w", files.ErrProviderRejected, errors.New("provider said 422"))
	for _, tc := range []struct {
		err        error
		status     int
		retryAfter string
	}{
		{fmt.Errorf("list: %w", limited), http.StatusTooManyRequests, "2"},
		{rejected, http.StatusBadRequest, ""},
	} {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/files?provider=openai", nil)
		rec := httptest.NewRecorder()
		writeError(rec, req, zap.NewNop(), tc.err)
		if rec.Code != tc.status || rec.Header().Get("Retry-After") != tc.retryAfter {
			t.Errorf("%v: %d Retry-After %q, want %d %q", tc.err, rec.Code, rec.Header().Get("Retry-After"), tc.status, tc.retryAfter)
		}
	}
}

// TestServiceKeyWritesAreToldWhy: a service key asking to write gets its
// own 403 message, not the management-only one.
func TestServiceKeyWritesAreToldWhy(t *testing.T) {
	for _, tc := range []struct {
		err     error
		message string
	}{
		{fmt.Errorf("delete: %w", keys.ErrReadOnlyKey), msgReadOnlyKey},
		{keys.ErrForbidden, msgManagementOnly},
	} {
		rec := httptest.NewRecorder()
		writeError(rec, httptest.NewRequest(http.MethodGet, "/api/v1/files", nil), zap.NewNop(), tc.err)
		var env envelope
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
			t.Fatal(err)
		}
		if rec.Code != 403 || env.Error.Message != tc.message {
			t.Errorf("%v: %d %q, want 403 %q", tc.err, rec.Code, env.Error.Message, tc.message)
		}
	}
}
