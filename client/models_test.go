package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

func TestModelPaths(t *testing.T) {
	var paths []string
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		paths = append(paths, r.URL.EscapedPath())
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":{"id":"openai/gpt-4o:free","endpoints":[]}}`)
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv)
	ctx := context.Background()
	for _, id := range []string{"gpt-4o", "openai/", "/gpt-4o"} {
		if _, err := c.GetModel(ctx, id); !errors.Is(err, errModelID) {
			t.Errorf("GetModel(%q) = %v, want errModelID", id, err)
		}
		if _, err := c.ModelEndpoints(ctx, id); !errors.Is(err, errModelID) {
			t.Errorf("ModelEndpoints(%q) = %v, want errModelID", id, err)
		}
	}
	if requests.Load() != 0 {
		t.Fatalf("%d requests sent for ids that are not author/slug", requests.Load())
	}
	if _, err := c.GetModel(ctx, "openai/gpt-4o:free"); err != nil {
		t.Fatal(err)
	}
	eps, err := c.ModelEndpoints(ctx, "~openai/gpt latest")
	if err != nil || eps == nil || len(eps) != 0 {
		t.Errorf("endpoints %v, %v: want an empty list", eps, err)
	}
	if len(paths) != 2 || paths[0] != "/api/v1/model/openai/gpt-4o:free" || paths[1] != "/api/v1/models/~openai/gpt%20latest/endpoints" {
		t.Errorf("paths %q", paths)
	}
}
