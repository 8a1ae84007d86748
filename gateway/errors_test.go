package gateway

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"
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
