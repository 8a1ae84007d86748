package console

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/aigateway/gateway/client"
	"github.com/aigateway/gateway/internal/audit"
)

// actor is the acting side of what the browser's request r does: the
// console's route (Via "console POST /console/sign-in"), the browser's
// address as the API's access log names it, the request's id, and the
// session's key and user when known. The console's changes made through
// the API lend only their Via to the API, which finds the rest itself
// (see lendVia); the console's own records (sign-in, sign-out, first run)
// use the whole of it.
func (c *Console) actor(w http.ResponseWriter, r *http.Request, keyHash, user string) audit.Actor {
	return audit.Actor{
		KeyHash: keyHash, UserID: user, Via: "console " + r.Pattern,
		ClientAddr: c.clientOf(r),
		// The API's outer middleware gave the browser's request its id.
		RequestID: w.Header().Get("X-Request-Id"),
	}
}

// lendVia puts the console's route in the context of r's calls of the API,
// which records it as the Via of the changes they make: the person used a
// console page, not the API.
func lendVia(r *http.Request) *http.Request {
	return r.WithContext(audit.WithActor(r.Context(), audit.Actor{Via: "console " + r.Pattern}))
}

// peerAddr is the host of r's peer, when no better address is known.
func peerAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// userOf is the user of the signed-in key: the API names it as the key's
// creator, which the gateway always makes the key's own user.
func userOf(me *whoami) string {
	if me == nil || me.CreatorUserID == nil {
		return ""
	}
	return *me.CreatorUserID
}

type auditData struct {
	Entries []auditRow
	Actions []audit.Action
	// Action and Target are the filters shown.
	Action, Target string
	// Newest and Older are the pager's links; empty: none.
	Newest, Older string
}

// auditRow is an entry as the page shows it.
type auditRow struct {
	client.AuditEntry
	// When is the entry's time to the second, in UTC.
	When string
	// By names the acting key, or the CLI or the gateway itself.
	By      string
	Changes []changeText
}

type changeText struct{ Field, Old, New string }

// auditPageSize is how many entries a page of the audit log shows.
const auditPageSize = 50

// auditLog lists the user's audit log, newest first, a page at a time,
// filtered by action and target: one GET /audit.
func (c *Console) auditLog(v *visit) error {
	if !v.me.IsManagementKey {
		return needManagement
	}
	q := v.r.URL.Query()
	d := auditData{Actions: audit.Actions, Action: q.Get("action"), Target: strings.TrimSpace(q.Get("target"))}
	page, err := v.api.Audit(v.ctx(), client.AuditQuery{Action: d.Action, Target: d.Target, Cursor: q.Get("cursor"), Limit: auditPageSize})
	if err != nil {
		return err
	}
	for _, e := range page.Entries {
		d.Entries = append(d.Entries, viewAuditEntry(e))
	}
	here := url.Values{"action": {d.Action}, "target": {d.Target}}
	if q.Get("cursor") != "" {
		d.Newest = withQuery("/console/audit", clone(here))
	}
	if page.Cursor != nil {
		older := clone(here)
		older.Set("cursor", *page.Cursor)
		d.Older = withQuery("/console/audit", older)
	}
	return v.show("audit", "Audit log", "audit", d)
}

func viewAuditEntry(e client.AuditEntry) auditRow {
	row := auditRow{AuditEntry: e, When: e.At.UTC().Format("2006-01-02 15:04:05 UTC"), By: e.Actor.KeyHash}
	switch {
	case row.By != "":
	case strings.HasPrefix(e.Actor.Via, "cli "):
		row.By = "command line"
	default:
		row.By = "the gateway"
	}
	for _, ch := range e.Changes {
		row.Changes = append(row.Changes, changeText{Field: ch.Field, Old: jsonText(ch.Old), New: jsonText(ch.New)})
	}
	return row
}

// jsonText shows a recorded value: a string as itself (quoted when
// empty), null as a dash, anything else as its JSON.
func jsonText(raw json.RawMessage) string {
	var s string
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return "—"
	case string(raw) == `""`:
		return "“”"
	case json.Unmarshal(raw, &s) == nil:
		return s
	}
	return string(raw)
}
