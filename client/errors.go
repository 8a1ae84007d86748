package client

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Error is the gateway's refusal of a call: every answer of status 400 or
// more, whether or not its body is the gateway's error envelope (a proxy's
// answer or net/http's own plain-text 400 are not).
type Error struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Message is the envelope's message, or the status text.
	Message string
	// Metadata is the envelope's client-safe details, such as "fields"
	// (the offending inputs) or "max_file_bytes"; nil when none.
	Metadata map[string]any
	// RequestID is the X-Request-Id of the answer, to find it in the
	// gateway's logs.
	RequestID string
	// RetryAfter is the answer's Retry-After (429, 503), zero when absent.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	s := fmt.Sprintf("gateway: %d %s", e.StatusCode, e.Message)
	if e.RequestID != "" {
		s += " (request " + e.RequestID + ")"
	}
	return s
}

// maxErrorBody bounds what is read of an error answer.
const maxErrorBody = 64 << 10

// readError turns a refusal into *Error and closes its body.
func readError(resp *http.Response) *Error {
	defer resp.Body.Close()
	e := &Error{
		StatusCode: resp.StatusCode,
		Message:    http.StatusText(resp.StatusCode),
		RequestID:  resp.Header.Get("X-Request-Id"),
		RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()),
	}
	var env struct {
		Error *struct {
			Message  string         `json:"message"`
			Metadata map[string]any `json:"metadata"`
		} `json:"error"`
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if json.Unmarshal(b, &env) == nil && env.Error != nil {
		if env.Error.Message != "" {
			e.Message = env.Error.Message
		}
		e.Metadata = env.Error.Metadata
	}
	return e
}
