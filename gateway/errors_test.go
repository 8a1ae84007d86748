package gateway

import (
	"context"
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
	"github.com/aigateway/gateway/files/sniff"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/limits"
	"github.com/aigateway/gateway/policy/spend"
	"github.com/aigateway/gateway/workspace"
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

// adapterError stands in for an adapter's error (a store's quota refusal, a
// provider's failure): it carries its own client-safe Metadata, which the
// envelope shows as it is.
type adapterError struct {
	sentinel error
	meta     map[string]any
}

func (e *adapterError) Error() string            { return "adapter: " + e.sentinel.Error() }
func (e *adapterError) Unwrap() error            { return e.sentinel }
func (e *adapterError) Metadata() map[string]any { return e.meta }

// busyInFlight refuses every lease: the key has its maximum of uploads in
// flight.
type busyInFlight struct{}

func (busyInFlight) Acquire(context.Context, string, int, time.Duration) (func(), bool, error) {
	return nil, false, nil
}

// TestTypedErrorMetadata: the edge builds each refusal's metadata from the
// typed error's fields, and the client gets exactly these bytes, however
// deep the error is wrapped; an adapter's error shows its own metadata.
func TestTypedErrorMetadata(t *testing.T) {
	admission := &limits.UploadAdmission{InFlight: busyInFlight{}, MaxInFlight: 2, LeaseTTL: time.Minute}
	_, inFlight := admission.Admit(context.Background(), "k1", "w1", 10)
	if !errors.Is(inFlight, limits.ErrTooManyUploads) {
		t.Fatalf("Admit = %v, want ErrTooManyUploads", inFlight)
	}
	// Written in another zone: the client is told the instant in UTC.
	resets := time.Date(2026, 11, 30, 1, 0, 0, 0, time.FixedZone("CET", 3600))
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"cost over the burst", &limits.ExceedsBurstError{Cost: 200, Burst: 100},
			`{"error":{"code":413,"message":"Request payload too large","metadata":{"cost":200,"limit":100}}}`},
		{"cost over the burst, wrapped", fmt.Errorf("admit: %w", &limits.ExceedsBurstError{Cost: 7, Burst: 6}),
			`{"error":{"code":413,"message":"Request payload too large","metadata":{"cost":7,"limit":6}}}`},
		{"denied by a limit", limits.Denied(limits.Decision{Limit: 10, RetryAfter: time.Second}, limits.LimitUploadBytes),
			`{"error":{"code":429,"message":"Rate limit exceeded","metadata":{"limit":"upload_bytes"}}}`},
		{"a limit built as a literal", fmt.Errorf("files: %w", &limits.LimitedError{Reason: limits.LimitUploads}),
			`{"error":{"code":429,"message":"Rate limit exceeded","metadata":{"limit":"files"}}}`},
		{"uploads in flight", inFlight,
			`{"error":{"code":429,"message":"Rate limit exceeded","metadata":{"limit":"uploads_in_flight"}}}`},
		{"key limit with a window", &spend.KeyLimitError{Limit: 5_000_000, Reset: keys.ResetDaily},
			`{"error":{"code":402,"message":"Key limit exceeded","metadata":{"limit":5,"limit_reset":"daily"}}}`},
		{"lifetime key limit", &spend.KeyLimitError{Limit: 2_500_000, Reset: keys.ResetNever},
			`{"error":{"code":402,"message":"Key limit exceeded","metadata":{"limit":2.5,"limit_reset":null}}}`},
		{"weekly budget", &spend.BudgetError{WorkspaceID: "w1", Interval: spend.Weekly, Limit: 1_500_000, ResetsAt: &resets},
			`{"error":{"code":402,"message":"Workspace budget exceeded","metadata":{"interval":"weekly","limit_usd":1.5,"resets_at":"2026-11-30T00:00:00Z","workspace_id":"w1"}}}`},
		{"lifetime budget", &spend.BudgetError{WorkspaceID: "w2", Interval: spend.Lifetime, Limit: 20},
			`{"error":{"code":402,"message":"Workspace budget exceeded","metadata":{"interval":"lifetime","limit_usd":0.00002,"resets_at":null,"workspace_id":"w2"}}}`},
		{"default workspace", fmt.Errorf("delete: %w", &workspace.NotDeletableError{Default: true, Files: 3}),
			`{"error":{"code":400,"message":"Invalid request parameters","metadata":{"default":true}}}`},
		{"workspace in use", &workspace.NotDeletableError{Files: 2, Keys: 1},
			`{"error":{"code":400,"message":"Invalid request parameters","metadata":{"files":2,"keys":1,"uploads_in_progress":0}}}`},
		{"type refused as a whole", &sniff.TypeError{Reason: "content is not one of the accepted file types", Offset: -1},
			`{"error":{"code":400,"message":"Invalid request parameters","metadata":{"fields":{"file":"content is not one of the accepted file types"}}}}`},
		{"text refused at an offset", fmt.Errorf("write: %w", &sniff.TypeError{Reason: "text is not valid UTF-8", Offset: 70000}),
			`{"error":{"code":400,"message":"Invalid request parameters","metadata":{"fields":{"file":"text is not valid UTF-8"},"offset":70000}}}`},
		{"text refused at its first byte", &sniff.TypeError{Reason: "text contains a NUL or control character", Offset: 0},
			`{"error":{"code":400,"message":"Invalid request parameters","metadata":{"fields":{"file":"text contains a NUL or control character"},"offset":0}}}`},
		{"empty file", fmt.Errorf("write: %w", sniff.ErrEmptyFile),
			`{"error":{"code":400,"message":"Invalid request parameters","metadata":{"fields":{"file":"is empty"}}}}`},
		{"filename as a whole", &files.FilenameError{Rule: files.RuleLength},
			`{"error":{"code":400,"message":"Invalid request parameters","metadata":{"fields":{"filename":"must be 1 to 255 characters"},"rule":"length"}}}`},
		{"filename at a position", &files.FilenameError{Rule: files.RuleControl, Position: 4},
			`{"error":{"code":400,"message":"Invalid request parameters","metadata":{"fields":{"filename":"must not contain control characters"},"position":4,"rule":"control_character"}}}`},
		{"file too large", &files.TooLargeError{Limit: 42},
			`{"error":{"code":413,"message":"Request payload too large","metadata":{"fields":{"file":"larger than the maximum file size"},"max_file_bytes":42}}}`},
		{"file too large for a provider", fmt.Errorf("byok: openai upload: reading the file: %w", &files.TooLargeError{Limit: 42}),
			`{"error":{"code":413,"message":"Request payload too large","metadata":{"fields":{"file":"larger than the maximum file size"},"max_file_bytes":42}}}`},
		{"quota", &files.QuotaError{Limit: 1000, Available: 10},
			`{"error":{"code":403,"message":"Workspace storage quota exceeded","metadata":{"available_bytes":10,"limit_bytes":1000}}}`},
		{"the store's quota", &adapterError{files.ErrQuotaExceeded, map[string]any{"limit_bytes": int64(1000), "requested_bytes": int64(401)}},
			`{"error":{"code":403,"message":"Workspace storage quota exceeded","metadata":{"limit_bytes":1000,"requested_bytes":401}}}`},
		{"a provider's failure", fmt.Errorf("upload: %w", &adapterError{files.ErrProvider, map[string]any{"provider": "openai", "provider_status": 500}}),
			`{"error":{"code":502,"message":"Provider returned error","metadata":{"provider":"openai","provider_status":500}}}`},
		{"nothing to tell", workspace.ErrNotDeletable,
			`{"error":{"code":400,"message":"Invalid request parameters","metadata":null}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			writeError(rec, httptest.NewRequest(http.MethodPost, "/api/v1/files", nil), zap.NewNop(), tc.err)
			if got := rec.Body.String(); got != tc.want {
				t.Errorf("body\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}
