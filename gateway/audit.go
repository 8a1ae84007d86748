package gateway

import (
	"cmp"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/aigateway/gateway/internal/audit"
	"github.com/aigateway/gateway/policy/keys"
)

// actAs runs the management routes with their caller as the actor of the
// changes they make (audit.WithActor): the store reads it back when it
// writes each change's audit entry in the change's own transaction. It
// sits below requireManagement, on the management routes only: the model
// lookups and the file routes change nothing recorded, and the lookup's
// allocations are counted.
//
// The console calls these routes in process with an actor of its own in
// the request's context, which lends the route it serves (Via) to the
// entry: the person used a console page, not the API. Only Via is taken
// from it; the key, its user, the client's address and the request id are
// the API's own findings, as for any caller. A remote client cannot put
// anything in a request's context, so it cannot lend a Via.
func (a *API) actAs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := callerOf(r)
		if k == nil { // below requireManagement there is always a key
			writeError(w, r, a.log, keys.ErrUnauthenticated)
			return
		}
		actor := audit.Actor{
			KeyHash:    k.ID,
			UserID:     k.UserID,
			Via:        r.Method + " " + routeTemplate(r),
			ClientAddr: a.observation.client(r),
			RequestID:  requestIDOf(r),
		}
		if lent := audit.ActorFrom(r.Context()); lent != audit.System && lent.Via != "" {
			actor.Via = lent.Via
		}
		next.ServeHTTP(w, r.WithContext(audit.WithActor(r.Context(), actor)))
	})
}

// routeTemplate is the pattern chi matched for r ("/api/v1/keys/{hash}"),
// never the raw path: an entry names the route, not the ids in it (the
// target says which).
func routeTemplate(r *http.Request) string {
	return cmp.Or(routePattern(r), r.URL.Path)
}

// ClientAddr is the client's address of r as the access log names it
// (behind trusted proxies, the first untrusted hop), for what is recorded
// beside the API: the console's sign-ins and sign-outs.
func (a *API) ClientAddr(r *http.Request) string { return a.observation.client(r) }

// auditEntry is one entry of GET /audit.
type auditEntry struct {
	ID      string         `json:"id"`
	At      string         `json:"at"`
	Action  audit.Action   `json:"action"`
	Target  string         `json:"target"`
	Actor   auditActor     `json:"actor"`
	Changes []audit.Change `json:"changes"`
}

type auditActor struct {
	KeyHash    string `json:"key_hash"`
	UserID     string `json:"user_id"`
	Via        string `json:"via"`
	ClientAddr string `json:"client_addr"`
	RequestID  string `json:"request_id"`
}

// auditPage is the answer of GET /audit, paged as GET /files pages:
// cursor continues the listing and is null on the last page.
type auditPage struct {
	Data    []auditEntry `json:"data"`
	HasMore bool         `json:"has_more"`
	Cursor  *string      `json:"cursor"`
}

// auditLog answers GET /audit: the caller's own user's entries, newest
// first, a page at a time. A management key of one user never reads
// another user's entries, whatever it filters on: the user is the
// caller's, never a parameter.
func (a *API) auditLog(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	q, err := parseAuditQuery(r.URL.Query())
	if err != nil {
		return err
	}
	q.UserID = caller.UserID
	limit := q.Limit
	// One entry more than the page tells whether another page follows,
	// where the store's bound allows; at the bound, a second look of one
	// entry past the page tells it.
	q.Limit = min(limit+1, audit.MaxLimit)
	entries, err := a.audit.AuditEntries(r.Context(), q)
	if err != nil {
		return err
	}
	more := len(entries) > limit
	if more {
		entries = entries[:limit]
	} else if len(entries) == limit && q.Limit == limit {
		last := entries[len(entries)-1]
		q.After, q.Limit = &audit.Cursor{At: last.At, ID: last.ID}, 1
		next, err := a.audit.AuditEntries(r.Context(), q)
		if err != nil {
			return err
		}
		more = len(next) > 0
	}
	page := auditPage{Data: make([]auditEntry, len(entries)), HasMore: more}
	for i, e := range entries {
		page.Data[i] = viewAuditEntry(e)
	}
	if more {
		last := entries[len(entries)-1]
		c := audit.Cursor{At: last.At, ID: last.ID}.Encode()
		page.Cursor = &c
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

func viewAuditEntry(e audit.Entry) auditEntry {
	changes := e.Changes
	if changes == nil {
		changes = []audit.Change{}
	}
	for i, c := range changes {
		// A value the store never had is null on the wire, never absent.
		if c.Old == nil {
			changes[i].Old = json.RawMessage("null")
		}
		if c.New == nil {
			changes[i].New = json.RawMessage("null")
		}
	}
	return auditEntry{
		ID: e.ID, At: e.At.UTC().Format(time.RFC3339), Action: e.Action, Target: e.Target,
		Actor: auditActor{
			KeyHash: e.Actor.KeyHash, UserID: e.Actor.UserID, Via: e.Actor.Via,
			ClientAddr: e.Actor.ClientAddr, RequestID: e.Actor.RequestID,
		},
		Changes: changes,
	}
}

// maxAuditFilter bounds the target and actor filters: ids, far shorter.
const maxAuditFilter = 128

// parseAuditQuery reads target, actor, action, since, cursor and limit,
// refusing each malformed one by name (and any other parameter, so that a
// misspelt filter is not taken for none).
func parseAuditQuery(query url.Values) (audit.Query, error) {
	q := audit.Query{Limit: audit.DefaultLimit}
	id := func(dst *string, problem string) paramReader {
		return func(v string) string {
			if v == "" || len(v) > maxAuditFilter {
				return problem
			}
			*dst = v
			return ""
		}
	}
	err := readQuery(query, refuseUnknown, map[string]paramReader{
		"target": id(&q.Target, "must be the id of a key, provider key or workspace"),
		"actor":  id(&q.Actor, "must be the hash of a key"),
		"action": func(v string) string {
			if !audit.Action(v).Valid() {
				return "must be one of the recorded actions (key.create, key.update, ...)"
			}
			q.Action = audit.Action(v)
			return ""
		},
		"since": func(v string) string {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return "must be a time in RFC 3339 (2026-11-28T00:00:00Z)"
			}
			q.Since = t.UTC()
			return ""
		},
		"cursor": func(v string) string {
			c, err := audit.DecodeCursor(v)
			if err != nil {
				return "must be the cursor of a previous page"
			}
			q.After = &c
			return ""
		},
		"limit": intParam(&q.Limit, 1, audit.MaxLimit),
	})
	return q, err
}
