package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// A list whose total says more than its pages bring must not be walked for
// ever: an empty page ends the walk.
func TestEmptyPageEndsTheWalk(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":[],"total_count":10}`)
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv)
	ctx := context.Background()
	for _, walk := range []struct {
		name string
		seq  func(yield func(struct{}, error) bool)
	}{
		{"workspaces", func(yield func(struct{}, error) bool) {
			for _, err := range c.Workspaces(ctx, 0) {
				if !yield(struct{}{}, err) {
					return
				}
			}
		}},
		{"provider keys", func(yield func(struct{}, error) bool) {
			for _, err := range c.ProviderKeys(ctx, "") {
				if !yield(struct{}{}, err) {
					return
				}
			}
		}},
	} {
		requests.Store(0)
		n := 0
		for _, err := range walk.seq {
			if err != nil {
				t.Fatalf("%s: %v", walk.name, err)
			}
			n++
		}
		if n != 0 || requests.Load() != 1 {
			t.Errorf("%s: %d items in %d requests, want none in 1", walk.name, n, requests.Load())
		}
	}
}

// An error ends a walk: it is yielded once, with a zero item, and no
// further page is asked for.
func TestWalkYieldsItsErrorOnce(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) > 1 {
			writeEnvelope(w, http.StatusInternalServerError, "Internal Server Error", nil)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":[{"id":"f1"}],"has_more":true,"cursor":"c2"}`)
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv)
	var ids []string
	var errs []error
	for f, err := range c.Files(context.Background()) {
		if err != nil {
			errs = append(errs, err)
			if f.ID != "" {
				t.Errorf("the error came with file %q", f.ID)
			}
			continue
		}
		ids = append(ids, f.ID)
	}
	var apiErr *Error
	if strings.Join(ids, ",") != "f1" || len(errs) != 1 || !errors.As(errs[0], &apiErr) || apiErr.StatusCode != 500 || requests.Load() != 2 {
		t.Errorf("files %v, errors %v in %d requests; want f1, then the 500 once, in 2", ids, errs, requests.Load())
	}
}

// nilRequestTransport answers every request with body, and leaves the
// answer's Request nil, as a RoundTripper may.
type nilRequestTransport struct{ body string }

func (t nilRequestTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(t.body))}, nil
}

// An answer that does not decode is an error naming the call, whatever
// the caller's transport left out of the answer.
func TestUndecodableAnswerIsAnError(t *testing.T) {
	c, err := New("http://gateway.test", "k", WithHTTPClient(&http.Client{Transport: nilRequestTransport{body: "not json"}}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.CurrentKey(ctx); err == nil || !strings.Contains(err.Error(), "GET /key") {
		t.Errorf("CurrentKey = %v, want a decode error naming GET /key", err)
	}
	if _, err := c.ListKeys(ctx, KeyQuery{}, 0); err == nil {
		t.Error("ListKeys decoded a page from an answer that is not JSON")
	}
	if _, err := c.CreateKey(ctx, KeyCreate{Name: "k"}); err == nil || !strings.Contains(err.Error(), "POST /keys") {
		t.Errorf("CreateKey = %v, want a decode error naming POST /keys", err)
	}
	if _, err := c.UploadFile(ctx, Upload{Filename: "a.txt", Content: strings.NewReader("a"), Size: 1}); err == nil {
		t.Error("UploadFile decoded a file from an answer that is not JSON")
	}
}

// Deletes go to their resource's path, with the file options' query, and
// are retried like every idempotent call.
func TestDeletes(t *testing.T) {
	var got []string
	var refused atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !refused.Swap(true) {
			w.Header().Set("Retry-After", "1")
			writeEnvelope(w, http.StatusServiceUnavailable, "Service temporarily unavailable", nil)
			return
		}
		got = append(got, r.Method+" "+r.URL.EscapedPath()+"?"+r.URL.RawQuery)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"deleted":true}`)
	}))
	defer srv.Close()
	c, waits := newTestClient(t, srv)
	ctx := context.Background()
	for _, err := range []error{
		c.DeleteKey(ctx, "a/b"),
		c.DeleteProviderKey(ctx, "p1"),
		c.DeleteWorkspace(ctx, "team"),
		c.DeleteFile(ctx, "f1", InWorkspace("w1")),
		c.DeleteBudget(ctx, "team", "daily"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"DELETE /api/v1/keys/a%2Fb?", "DELETE /api/v1/byok/p1?", "DELETE /api/v1/workspaces/team?",
		"DELETE /api/v1/files/f1?workspace_id=w1", "DELETE /api/v1/workspaces/team/budgets/daily?",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("deletes sent:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(*waits) != 1 {
		t.Errorf("waits %v, want the one retry of the first delete", *waits)
	}
}
