package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// A part whose browser went away gets no answer at all: the response is
// aborted, as the API aborts its own, rather than a status line claiming
// one (the access log then says 499).
func TestUploadAnswerToADepartedBrowserIsAborted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := httptest.NewRecorder()
	v := &visit{w: rec, r: httptest.NewRequest("POST", "/console/uploads/upload_x/parts", nil).WithContext(ctx)}
	defer func() {
		if p := recover(); p != http.ErrAbortHandler {
			t.Errorf("recovered %v, want http.ErrAbortHandler", p)
		}
		if rec.Code != http.StatusOK || rec.Body.Len() != 0 || len(rec.Header()) != 0 {
			t.Errorf("something was written: %d %q %v", rec.Code, rec.Body, rec.Header())
		}
	}()
	_ = (&Console{}).uploadAnswer(v, nil, context.Canceled)
	t.Error("uploadAnswer returned")
}
