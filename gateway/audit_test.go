package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/internal/audit"
	"github.com/aigateway/gateway/internal/outage"
	"github.com/aigateway/gateway/policy/keys"
)

// memoryAudit is an audit.Store over a slice, answering as the contract
// says: the query's user only, its filters, newest first by (At, ID), at
// most Limit. It records the queries it was asked.
type memoryAudit struct {
	entries []audit.Entry
	queries []audit.Query
	err     error
}

func (m *memoryAudit) AuditEntries(_ context.Context, q audit.Query) ([]audit.Entry, error) {
	m.queries = append(m.queries, q)
	if m.err != nil {
		return nil, m.err
	}
	sorted := slices.Clone(m.entries)
	slices.SortFunc(sorted, func(a, b audit.Entry) int {
		if c := b.At.Compare(a.At); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	var out []audit.Entry
	for _, e := range sorted {
		older := q.After == nil || e.At.Before(q.After.At) || (e.At.Equal(q.After.At) && e.ID < q.After.ID)
		if e.Actor.UserID != q.UserID || !older ||
			(q.Target != "" && e.Target != q.Target) || (q.Actor != "" && e.Actor.KeyHash != q.Actor) ||
			(q.Action != "" && e.Action != q.Action) || e.At.Before(q.Since) {
			continue
		}
		if len(out) == min(q.Limit, audit.MaxLimit) {
			break
		}
		out = append(out, e)
	}
	return out, nil
}

func (m *memoryAudit) RecordAudit(_ context.Context, e audit.Entry) error {
	m.entries = append(m.entries, e)
	return m.err
}

func (m *memoryAudit) PruneAudit(context.Context, time.Time, int) (int, error) { return 0, nil }

// auditKeys are the callers of the audit tests: two users' management
// keys and a standard and a service key of the first user.
var auditKeys = fakeAuth{
	"mgmt":     {ID: "00000000000000a1", UserID: "u1", Role: keys.RoleManagement},
	"other":    {ID: "00000000000000b1", UserID: "u2", Role: keys.RoleManagement},
	"standard": {ID: "00000000000000a2", UserID: "u1", Role: keys.RoleStandard},
	"service":  {ID: "00000000000000a3", UserID: "u1", Role: keys.RoleService},
}

type auditAnswer struct {
	Data []struct {
		ID      string `json:"id"`
		At      string `json:"at"`
		Action  string `json:"action"`
		Target  string `json:"target"`
		Actor   map[string]string
		Changes []struct {
			Field string          `json:"field"`
			Old   json.RawMessage `json:"old"`
			New   json.RawMessage `json:"new"`
		} `json:"changes"`
	} `json:"data"`
	HasMore bool    `json:"has_more"`
	Cursor  *string `json:"cursor"`
}

func getAudit(t *testing.T, h http.Handler, query, token string) (int, auditAnswer, *httptest.ResponseRecorder) {
	t.Helper()
	rec := do(t, h, "GET", apiPrefix+"/audit"+query, token, nil)
	var a auditAnswer
	if rec.Code == http.StatusOK {
		if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
			t.Fatalf("%s: %v", rec.Body, err)
		}
	}
	return rec.Code, a, rec
}

// TestAuditShape: an entry is shown with every field, its time in UTC
// RFC 3339, its actor whole and its changes as recorded (null where a
// value is absent); only the caller's user's entries are shown.
func TestAuditShape(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.FixedZone("CET", 3600))
	store := &memoryAudit{entries: []audit.Entry{
		{ID: "e1", At: at, Action: audit.KeyDisable, Target: "00000000000000a2",
			Actor:   audit.Actor{KeyHash: "00000000000000a1", UserID: "u1", Via: "PATCH /api/v1/keys/{hash}", ClientAddr: "192.0.2.1", RequestID: "r1"},
			Changes: []audit.Change{{Field: "disabled", Old: json.RawMessage("false"), New: json.RawMessage("true")}, {Field: "label"}}},
		{ID: "e2", At: at, Action: audit.KeyCreate, Target: "00000000000000b2", Actor: audit.Actor{UserID: "u2", Via: "cli keys create"}},
	}}
	api, _ := newTestAPI(t, Options{Auth: auditKeys, Audit: store})
	code, got, rec := getAudit(t, api.Handler(), "", "mgmt")
	if code != http.StatusOK || len(got.Data) != 1 {
		t.Fatalf("%d %s", code, rec.Body)
	}
	e := got.Data[0]
	if e.ID != "e1" || e.At != "2026-11-27T09:00:00Z" || e.Action != "key.disable" || e.Target != "00000000000000a2" {
		t.Errorf("entry %+v", e)
	}
	want := map[string]string{"key_hash": "00000000000000a1", "user_id": "u1", "via": "PATCH /api/v1/keys/{hash}", "client_addr": "192.0.2.1", "request_id": "r1"}
	for k, v := range want {
		if e.Actor[k] != v {
			t.Errorf("actor.%s = %q, want %q", k, e.Actor[k], v)
		}
	}
	if len(e.Changes) != 2 || e.Changes[0].Field != "disabled" || string(e.Changes[0].Old) != "false" || string(e.Changes[0].New) != "true" ||
		string(e.Changes[1].Old) != "null" || string(e.Changes[1].New) != "null" {
		t.Errorf("changes %s", rec.Body)
	}
	if got.HasMore || got.Cursor != nil || !strings.Contains(rec.Body.String(), `"cursor":null`) {
		t.Errorf("one page: %s", rec.Body)
	}
	if q := store.queries[0]; q.UserID != "u1" || q.Limit != audit.DefaultLimit+1 {
		t.Errorf("query %+v", q)
	}
	// An entry with no changes shows an empty list, not null.
	_, got, rec = getAudit(t, api.Handler(), "", "other")
	if len(got.Data) != 1 || got.Data[0].ID != "e2" || !strings.Contains(rec.Body.String(), `"changes":[]`) {
		t.Errorf("other user: %s", rec.Body)
	}
}

// TestAuditFilters: each filter reaches the store as given; the user is
// the caller's whatever the query says.
func TestAuditFilters(t *testing.T) {
	store := &memoryAudit{}
	api, _ := newTestAPI(t, Options{Auth: auditKeys, Audit: store})
	q := url.Values{"target": {"ws-1"}, "actor": {"00000000000000a1"}, "action": {"budget.set"},
		"since": {"2026-11-01T00:00:00+01:00"}, "limit": {"7"}}
	code, got, rec := getAudit(t, api.Handler(), "?"+q.Encode(), "mgmt")
	if code != http.StatusOK || got.Data == nil || len(got.Data) != 0 || !strings.Contains(rec.Body.String(), `"data":[]`) {
		t.Fatalf("%d %s", code, rec.Body)
	}
	sent := store.queries[0]
	want := audit.Query{UserID: "u1", Target: "ws-1", Actor: "00000000000000a1", Action: audit.BudgetSet,
		Since: time.Date(2026, 10, 31, 23, 0, 0, 0, time.UTC), Limit: 8}
	if sent.UserID != want.UserID || sent.Target != want.Target || sent.Actor != want.Actor || sent.Action != want.Action ||
		!sent.Since.Equal(want.Since) || sent.Limit != want.Limit || sent.After != nil {
		t.Errorf("query %+v, want %+v", sent, want)
	}
}

// TestAuditPaging: pages follow one another by cursor, newest first,
// without a gap or a repeat, also among entries of one instant; the last
// page has no cursor; the largest page knows whether another follows.
func TestAuditPaging(t *testing.T) {
	base := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	store := &memoryAudit{}
	for i := range 450 {
		// Three entries an instant: the id breaks the ties.
		store.entries = append(store.entries, audit.Entry{ID: fmt.Sprintf("e%03d", i), At: base.Add(time.Duration(i/3) * time.Second),
			Action: audit.KeyUpdate, Actor: audit.Actor{UserID: "u1"}})
	}
	api, _ := newTestAPI(t, Options{Auth: auditKeys, Audit: store})
	h := api.Handler()
	for _, limit := range []int{7, 150, 200} {
		var seen []string
		query := fmt.Sprintf("?limit=%d", limit)
		for pages := 0; ; pages++ {
			if pages > 100 {
				t.Fatal("paging does not end")
			}
			code, got, rec := getAudit(t, h, query, "mgmt")
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, rec.Body)
			}
			for _, e := range got.Data {
				seen = append(seen, e.ID)
			}
			if got.HasMore != (got.Cursor != nil) || (got.HasMore && len(got.Data) != limit) {
				t.Fatalf("limit %d: has_more %v, cursor %v, %d entries", limit, got.HasMore, got.Cursor, len(got.Data))
			}
			if !got.HasMore {
				break
			}
			query = fmt.Sprintf("?limit=%d&cursor=%s", limit, url.QueryEscape(*got.Cursor))
		}
		if len(seen) != 450 {
			t.Fatalf("limit %d: %d entries seen, want 450", limit, len(seen))
		}
		for i, id := range seen {
			if want := fmt.Sprintf("e%03d", 449-i); id != want {
				t.Fatalf("limit %d: entry %d is %s, want %s", limit, i, id, want)
			}
		}
	}
	// Two full pages of the largest size: the second is the last.
	store.entries = store.entries[:400]
	code, got, _ := getAudit(t, h, "?limit=200", "mgmt")
	if code != http.StatusOK || !got.HasMore {
		t.Fatal("first of two full pages says it is the last")
	}
	_, got, _ = getAudit(t, h, "?limit=200&cursor="+url.QueryEscape(*got.Cursor), "mgmt")
	if len(got.Data) != 200 || got.HasMore || got.Cursor != nil {
		t.Errorf("last full page: %d entries, has_more %v", len(got.Data), got.HasMore)
	}
}

// TestAuditRefusals: a key that is not a management key is refused as on
// every management route; each malformed parameter is a 400 naming it; a
// store out of reach is a 503.
func TestAuditRefusals(t *testing.T) {
	store := &memoryAudit{}
	api, _ := newTestAPI(t, Options{Auth: auditKeys, Audit: store})
	h := api.Handler()
	for _, token := range []string{"standard", "service"} {
		rec := do(t, h, "GET", apiPrefix+"/audit", token, nil)
		if env := decodeEnvelope(t, rec); rec.Code != http.StatusForbidden {
			t.Errorf("%s key: %d %+v, want 403", token, rec.Code, env)
		}
	}
	if rec := do(t, h, "GET", apiPrefix+"/audit", "", nil); rec.Code != http.StatusUnauthorized {
		t.Errorf("no key: %d", rec.Code)
	}
	for query, field := range map[string]string{
		"?action=key.explode":                "action",
		"?action=":                           "action",
		"?since=yesterday":                   "since",
		"?since=2026-11-27":                  "since",
		"?cursor=bm90IGEgY3Vyc29y":           "cursor",
		"?cursor=%21%21":                     "cursor",
		"?limit=0":                           "limit",
		"?limit=201":                         "limit",
		"?limit=ten":                         "limit",
		"?limit=1&limit=2":                   "limit",
		"?target=":                           "target",
		"?actor=":                            "actor",
		"?actor=" + strings.Repeat("a", 129): "actor",
		"?user_id=u2":                        "user_id",
	} {
		rec := do(t, h, "GET", apiPrefix+"/audit"+query, "mgmt", nil)
		env := decodeEnvelope(t, rec)
		if fields, _ := env.Error.Metadata["fields"].(map[string]any); rec.Code != http.StatusBadRequest || fields[field] == nil {
			t.Errorf("%s: %d %+v, want 400 naming %s", query, rec.Code, env, field)
		}
	}
	if len(store.queries) != 0 {
		t.Errorf("a refused query reached the store: %+v", store.queries)
	}
	store.err = fmt.Errorf("sqlstore: audit entries: %w", outage.ErrUnavailable)
	rec := do(t, h, "GET", apiPrefix+"/audit", "mgmt", nil)
	if env := decodeEnvelope(t, rec); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("store out of reach: %d %+v, want 503", rec.Code, env)
	}
}

// actorKeys is a KeyManager that records the actor each change is made
// with.
type actorKeys struct {
	KeyManager
	actors []audit.Actor
}

func (k *actorKeys) Update(ctx context.Context, _, id string, _ keys.UpdateRequest) (keys.APIKey, error) {
	k.actors = append(k.actors, audit.ActorFrom(ctx))
	return keys.APIKey{ID: id, UserID: "u1", Role: keys.RoleStandard}, nil
}

func (k *actorKeys) Delete(ctx context.Context, _, _ string) error {
	k.actors = append(k.actors, audit.ActorFrom(ctx))
	return errors.New("not deleted")
}

// TestAuditActorOfChanges: a management route makes its change with the
// caller as actor: its key and user, the route's template (not the path),
// the client's address as the access log has it and the request's id. A
// Via lent by the console calling in process replaces the route, nothing
// else.
func TestAuditActorOfChanges(t *testing.T) {
	km := &actorKeys{}
	api, _ := newTestAPI(t, Options{Auth: auditKeys, Keys: km})
	h := api.Handler()
	req := httptest.NewRequest("PATCH", apiPrefix+"/keys/00000000000000a2", strings.NewReader(`{"disabled":true}`))
	req.Header.Set("Authorization", "Bearer mgmt")
	req.Header.Set("X-Request-Id", "req-audit-1")
	req.Header.Set("Content-Type", "application/json")
	req.RemoteAddr = "198.51.100.7:4242"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || len(km.actors) != 1 {
		t.Fatalf("%d %s, %d changes", rec.Code, rec.Body, len(km.actors))
	}
	want := audit.Actor{KeyHash: "00000000000000a1", UserID: "u1", Via: "PATCH /api/v1/keys/{hash}", ClientAddr: "198.51.100.7", RequestID: "req-audit-1"}
	if km.actors[0] != want {
		t.Errorf("actor %+v, want %+v", km.actors[0], want)
	}

	// The console's in-process call lends its page.
	ctx := audit.WithActor(context.Background(), audit.Actor{KeyHash: "forged", UserID: "forged", Via: "console POST /console/keys/{hash}/{change}"})
	req = httptest.NewRequestWithContext(ctx, "DELETE", apiPrefix+"/keys/00000000000000a2", nil)
	req.Header.Set("Authorization", "Bearer mgmt")
	req.RemoteAddr = "198.51.100.8:1"
	h.ServeHTTP(httptest.NewRecorder(), req)
	if len(km.actors) != 2 {
		t.Fatal("the delete was not made")
	}
	got := km.actors[1]
	if got.Via != "console POST /console/keys/{hash}/{change}" || got.KeyHash != "00000000000000a1" || got.UserID != "u1" ||
		got.ClientAddr != "198.51.100.8" || got.RequestID == "" {
		t.Errorf("console's actor %+v", got)
	}
}
