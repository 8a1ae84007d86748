package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// keyServer answers GET /api/v1/keys from n keys k0…k(n-1), a page of
// KeysPerPage from the offset asked, and records the queries.
func keyServer(t *testing.T, n int) (*httptest.Server, *[]string) {
	t.Helper()
	var mu sync.Mutex
	queries := &[]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/api/v1/keys" {
			writeEnvelope(w, http.StatusNotFound, "Resource not found", nil)
			return
		}
		mu.Lock()
		*queries = append(*queries, r.URL.RawQuery)
		mu.Unlock()
		offset, _ := strconv.Atoi(r.URL.Query().Get("offset"))
		var keys []string
		for i := offset; i < min(offset+KeysPerPage, n); i++ {
			keys = append(keys, fmt.Sprintf(`{"hash":"k%d","name":"key %d","created_at":"2026-11-23T12:00:00Z"}`, i, i))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data":[%s]}`, strings.Join(keys, ","))
	}))
	t.Cleanup(srv.Close)
	return srv, queries
}

func TestListKeys(t *testing.T) {
	srv, queries := keyServer(t, 150)
	c, _ := newTestClient(t, srv)
	ctx := context.Background()

	p, err := c.ListKeys(ctx, KeyQuery{IncludeDisabled: true, Workspace: "team a"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Keys) != KeysPerPage || p.Keys[0].Hash != "k0" || p.Keys[0].Name != "key 0" || p.Next != KeysPerPage {
		t.Errorf("first page: %d keys from %q, next %d; want %d from k0, next %d", len(p.Keys), p.Keys[0].Hash, p.Next, KeysPerPage, KeysPerPage)
	}
	if got, want := (*queries)[0], "include_disabled=true&offset=0&workspace_id=team+a"; got != want {
		t.Errorf("query %q, want %q", got, want)
	}

	p, err = c.ListKeys(ctx, KeyQuery{}, p.Next)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Keys) != 50 || p.Keys[0].Hash != "k100" || p.Next != 0 {
		t.Errorf("last page: %d keys from %q, next %d; want 50 from k100, next 0", len(p.Keys), p.Keys[0].Hash, p.Next)
	}
	if got, want := (*queries)[1], "offset=100"; got != want {
		t.Errorf("query %q, want %q", got, want)
	}
}

func TestListKeysRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeEnvelope(w, http.StatusForbidden, "Only management keys can perform this operation", nil)
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv)
	p, err := c.ListKeys(context.Background(), KeyQuery{}, 0)
	var apiErr *Error
	if p != nil || !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusForbidden || apiErr.Message != "Only management keys can perform this operation" {
		t.Errorf("ListKeys = %v, %v; want nil and the 403 *Error", p, err)
	}
}

func TestKeysWalksEveryPage(t *testing.T) {
	for _, n := range []int{0, 3, KeysPerPage, 2*KeysPerPage + 3} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			srv, queries := keyServer(t, n)
			c, _ := newTestClient(t, srv)
			got := 0
			for k, err := range c.Keys(context.Background(), KeyQuery{}) {
				if err != nil {
					t.Fatal(err)
				}
				if k.Hash != "k"+strconv.Itoa(got) {
					t.Fatalf("key %d is %q", got, k.Hash)
				}
				got++
			}
			// A full page is followed by one more request, which may be
			// empty: the gateway tells no total.
			if want := n/KeysPerPage + 1; got != n || len(*queries) != want {
				t.Errorf("%d keys in %d requests, want %d in %d", got, len(*queries), n, want)
			}
		})
	}
}

func TestKeysStopsWhenTheCallerDoes(t *testing.T) {
	srv, queries := keyServer(t, 3*KeysPerPage)
	c, _ := newTestClient(t, srv)
	for k, err := range c.Keys(context.Background(), KeyQuery{}) {
		if err != nil || k.Hash == "k120" {
			break
		}
	}
	if len(*queries) != 2 {
		t.Errorf("a walk stopped on the second page made %d requests, want 2", len(*queries))
	}
}

func TestProviderKeysWalksToTheTotal(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		q := r.URL.Query()
		if q.Get("limit") != "100" || q.Get("workspace_id") != "team" {
			t.Errorf("query %q", r.URL.RawQuery)
		}
		offset, _ := strconv.Atoi(q.Get("offset"))
		var items []string
		for i := offset; i < min(offset+100, 130); i++ {
			items = append(items, fmt.Sprintf(`{"id":"p%d","provider":"openai","created_at":"2026-11-23T12:00:00Z"}`, i))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data":[%s],"total_count":130}`, strings.Join(items, ","))
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv)
	n := 0
	for k, err := range c.ProviderKeys(context.Background(), "team") {
		if err != nil {
			t.Fatal(err)
		}
		if k.ID != "p"+strconv.Itoa(n) {
			t.Fatalf("provider key %d is %q", n, k.ID)
		}
		n++
	}
	if n != 130 || requests.Load() != 2 {
		t.Errorf("%d provider keys in %d requests, want 130 in 2", n, requests.Load())
	}
}
