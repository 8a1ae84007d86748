package console_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/aigateway/gateway/client"
	"github.com/aigateway/gateway/gateway/console"
	"github.com/aigateway/gateway/internal/audit"
	"github.com/aigateway/gateway/internal/outage"
)

// recorder is a console.AuditRecorder that keeps what it is given, or
// fails with err.
type recorder struct {
	mu      sync.Mutex
	entries []audit.Entry
	err     error
}

func (r *recorder) RecordAudit(_ context.Context, e audit.Entry) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	r.entries = append(r.entries, e)
	return nil
}

// TestSignInIsRecordedFirst: a sign-in is recorded, with the key and its
// user as actor and target, before its session is issued; one that cannot
// be recorded is refused with 503 and issues no session.
func TestSignInIsRecordedFirst(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testConfig(t), true)
	me, err := g.api(t, g.Management).CurrentKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{err: errors.Join(errors.New("sqlstore: write audit entry"), outage.ErrUnavailable)}
	c, err := console.New(console.Options{API: g.app.Handler(), SessionKey: []byte("a session key of thirty-two byte"), Audit: rec,
		ClientAddr: func(*http.Request) string { return "203.0.113.9" }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	defer srv.Close()
	b := newVisitor(t, srv.URL)
	p := b.post("/console/sign-in", url.Values{"csrf": {b.csrf("/console/sign-in")}, "key": {g.Management}})
	if p.StatusCode != http.StatusServiceUnavailable || strings.Contains(p.Header.Get("Set-Cookie"), "console_session=") {
		t.Fatalf("sign-in that cannot be recorded = %d, Set-Cookie %q; want 503 and no session", p.StatusCode, p.Header.Values("Set-Cookie"))
	}
	if home := b.get("/console/"); home.StatusCode != http.StatusSeeOther || home.Header.Get("Location") != "/console/sign-in" {
		t.Errorf("after the refused sign-in, /console/ = %d to %q: a session was issued", home.StatusCode, home.Header.Get("Location"))
	}

	rec.err = nil
	b.signIn(g.Management)
	if len(rec.entries) != 1 {
		t.Fatalf("%d entries recorded, want the sign-in", len(rec.entries))
	}
	want := audit.Entry{Action: audit.ConsoleSignIn, Target: me.Hash,
		Actor: audit.Actor{KeyHash: me.Hash, UserID: "u1", Via: "console POST /console/sign-in", ClientAddr: "203.0.113.9"}}
	if got := rec.entries[0]; got.Action != want.Action || got.Target != want.Target || got.Actor != want.Actor || got.Changes != nil {
		t.Errorf("recorded %+v, want %+v", got, want)
	}
}

// TestConsoleChangesAreRecorded: on a whole gateway, the console's
// sign-in, its changes made through the API and its sign-out are in the
// user's audit log, each with the session's key, the console's page as
// Via, the browser's address and the request's id.
func TestConsoleChangesAreRecorded(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testConfig(t), true)
	ctx := context.Background()
	api := g.api(t, g.Management)
	me, err := api.CurrentKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	std, err := api.CreateKey(ctx, client.KeyCreate{Name: "to disable"})
	if err != nil {
		t.Fatal(err)
	}
	b := g.browser(t)
	b.signIn(g.Management)
	if p := b.post("/console/workspaces", url.Values{"csrf": {b.csrf("/console/workspaces")}, "name": {"Audited"}, "slug": {"audited"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("create a workspace: %d\n%s", p.StatusCode, p.Body)
	}
	if p := b.post("/console/keys/"+std.Key.Hash+"/disable", url.Values{"csrf": {b.csrf("/console/keys")}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("disable a key: %d\n%s", p.StatusCode, p.Body)
	}
	if p := b.post("/console/sign-out", url.Values{"csrf": {b.csrf("/console/keys")}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign out: %d\n%s", p.StatusCode, p.Body)
	}

	page, err := api.Audit(ctx, client.AuditQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ action, target, via string }{
		{"console.sign_out", me.Hash, "console POST /console/sign-out"},
		{"key.disable", std.Key.Hash, "console POST /console/keys/{hash}/{change}"},
		{"workspace.create", "", "console POST /console/workspaces"},
		{"console.sign_in", me.Hash, "console POST /console/sign-in"},
		{"key.create", std.Key.Hash, "POST /api/v1/keys"},
	}
	if len(page.Entries) < len(want) {
		t.Fatalf("%d entries, want at least %d: %+v", len(page.Entries), len(want), page.Entries)
	}
	for i, w := range want {
		e := page.Entries[i]
		if e.Action != w.action || (w.target != "" && e.Target != w.target) || e.Actor.Via != w.via ||
			e.Actor.KeyHash != me.Hash || e.Actor.UserID != "u1" || e.Actor.ClientAddr != "127.0.0.1" || e.Actor.RequestID == "" {
			t.Errorf("entry %d: %+v, want %s of %q through %s by the session's key", i, e, w.action, w.target, w.via)
		}
	}
	if d := page.Entries[1]; len(d.Changes) != 1 || d.Changes[0].Field != "disabled" || string(d.Changes[0].New) != "true" {
		t.Errorf("the disable's changes: %+v", d.Changes)
	}
}

// shownSecret finds the secret the first-run page shows.
var shownSecret = regexp.MustCompile(`id="new-secret"[^>]*>([^<]+)<`)

// TestFirstRunIsRecorded: the first-run link's use, recorded before the
// key is made, and the key are the first user's entries, made through the
// first-run page.
func TestFirstRunIsRecorded(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testConfig(t), false)
	link := g.app.FirstRunLink(mustURL(t, g.URL).Host)
	if link == "" {
		t.Fatal("no first-run link")
	}
	token := mustURL(t, link).Query().Get("token")
	b := g.browser(t)
	form := b.csrf("/console/first-run?token=" + url.QueryEscape(token))
	p := b.post("/console/first-run", url.Values{"csrf": {form}, "token": {token}})
	if p.StatusCode != http.StatusCreated {
		t.Fatalf("first run: %d\n%s", p.StatusCode, p.Body)
	}
	m := shownSecret.FindStringSubmatch(p.Body)
	if m == nil {
		t.Fatalf("no key shown\n%s", p.Body)
	}
	secret := m[1]
	api := g.api(t, secret)
	me, err := api.CurrentKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	page, err := api.Audit(context.Background(), client.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	// The link's use, the user's default workspace made for the key, the
	// key.
	if len(page.Entries) != 3 || page.Entries[1].Action != "workspace.create" {
		t.Fatalf("%d entries, want the link's use, the default workspace and the key: %+v", len(page.Entries), page.Entries)
	}
	made, used := page.Entries[0], page.Entries[2]
	if used.Action != "first_run.use" || used.Actor.Via != "console POST /console/first-run" || used.Actor.UserID != "admin" || used.Actor.ClientAddr != "127.0.0.1" {
		t.Errorf("the link's use: %+v", used)
	}
	if made.Action != "key.create" || made.Target != me.Hash || made.Actor.Via != "console POST /console/first-run" || made.Actor.UserID != "admin" {
		t.Errorf("the key's creation: %+v", made)
	}
}
