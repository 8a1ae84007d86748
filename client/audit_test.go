package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestAuditQuery: every field of the query is sent by its parameter's
// name, and the answer's entries are read whole.
func TestAuditQuery(t *testing.T) {
	var (
		mu    sync.Mutex
		asked string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = r.URL.Path + "?" + r.URL.RawQuery
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":[{"id":"e1","at":"2026-11-27T09:00:00Z","action":"key.disable","target":"00000000000000a2",
			"actor":{"key_hash":"00000000000000a1","user_id":"u1","via":"PATCH /api/v1/keys/{hash}","client_addr":"192.0.2.1","request_id":"r1"},
			"changes":[{"field":"disabled","old":false,"new":true}]}],"has_more":true,"cursor":"next"}`)
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv)
	for q, want := range map[AuditQuery]string{
		{}: "/api/v1/audit?",
		{Target: "ws 1", Actor: "00000000000000a1", Action: "budget.set", Cursor: "abc", Limit: 7,
			Since: time.Date(2026, 11, 1, 1, 0, 0, 0, time.FixedZone("CET", 3600))}: "/api/v1/audit?action=budget.set&actor=00000000000000a1&cursor=abc&limit=7&since=2026-11-01T00%3A00%3A00Z&target=ws+1",
	} {
		p, err := c.Audit(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		got := asked
		mu.Unlock()
		if got != want {
			t.Errorf("%+v asked %s, want %s", q, got, want)
		}
		if len(p.Entries) != 1 || !p.HasMore || p.Cursor == nil || *p.Cursor != "next" {
			t.Fatalf("page %+v", p)
		}
		e := p.Entries[0]
		if e.ID != "e1" || !e.At.Equal(time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)) || e.Action != "key.disable" ||
			e.Actor != (AuditActor{KeyHash: "00000000000000a1", UserID: "u1", Via: "PATCH /api/v1/keys/{hash}", ClientAddr: "192.0.2.1", RequestID: "r1"}) ||
			len(e.Changes) != 1 || e.Changes[0].Field != "disabled" || string(e.Changes[0].Old) != "false" || string(e.Changes[0].New) != "true" {
			t.Errorf("entry %+v", e)
		}
	}
}

// TestAuditEntriesWalk: the iterator follows the cursors to the last page
// (cursor null), keeping the filters on every page, and stops at an error,
// which it yields.
func TestAuditEntriesWalk(t *testing.T) {
	var (
		mu    sync.Mutex
		asked []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.RawQuery)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Query().Get("cursor") {
		case "":
			_, _ = io.WriteString(w, `{"data":[{"id":"e3"},{"id":"e2"}],"has_more":true,"cursor":"c2"}`)
		case "c2":
			_, _ = io.WriteString(w, `{"data":[{"id":"e1"}],"has_more":false,"cursor":null}`)
		default:
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"code":400,"message":"Invalid request parameters","metadata":{"fields":{"cursor":"must be the cursor of a previous page"}}}}`)
		}
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv)
	var ids []string
	for e, err := range c.AuditEntries(context.Background(), AuditQuery{Action: "key.update", Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	if fmt.Sprint(ids) != "[e3 e2 e1]" {
		t.Errorf("walked %v", ids)
	}
	mu.Lock()
	if fmt.Sprint(asked) != "[action=key.update&limit=2 action=key.update&cursor=c2&limit=2]" {
		t.Errorf("asked %q", asked)
	}
	mu.Unlock()

	var last error
	n := 0
	for _, err := range c.AuditEntries(context.Background(), AuditQuery{Cursor: "tampered"}) {
		n++
		last = err
	}
	var apiErr *Error
	if n != 1 || !errors.As(last, &apiErr) || apiErr.StatusCode != http.StatusBadRequest {
		t.Errorf("a refused page: %d yields, last %v", n, last)
	}
}
