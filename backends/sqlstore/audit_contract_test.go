package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/aigateway/gateway/internal/audit"
	"github.com/aigateway/gateway/internal/money"
	"github.com/aigateway/gateway/internal/outage"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/spend"
	"github.com/aigateway/gateway/workspace"
)

// TestAuditContract is the audit log every database must keep: each
// management change leaves exactly its entry, in its transaction; each
// subtest on a fresh database of each.
func TestAuditContract(t *testing.T) {
	t.Parallel()
	tests := []contractCase{
		{"Keys", testAuditKeys},
		{"Keys/CLI", testAuditKeysCLI},
		{"Keys/ReplayRecordsNothing", testAuditKeyReplay},
		{"ProviderKeys", testAuditProviderKeys},
		{"ProviderKeys/CLI", testAuditProviderKeysCLI},
		{"Workspaces", testAuditWorkspaces},
		{"Workspaces/ConcurrentUpdates", testAuditWorkspaceConcurrentUpdates},
		{"Budgets", testAuditBudgets},
		{"SignOut", testAuditSignOut},
		{"Query", testAuditQuery},
		{"Prune", testAuditPrune},
		{"FailedWriteChangesNothing", testAuditFailedWrite},
		{"OutageIsUnavailable", testAuditOutage},
	}
	runOnBothDatabases(t, tests)
}

// apiActor is alice's management key acting over the API.
var apiActor = audit.Actor{KeyHash: "0123456789abcdef", UserID: "alice", Via: "PATCH /api/v1/keys/{hash}",
	ClientAddr: "192.0.2.7", RequestID: "req-1"}

func asActor(t *testing.T, a audit.Actor) context.Context {
	return audit.WithActor(testContext(t), a)
}

// allEntries returns every entry of the log, newest first, read behind
// AuditEntries' back so that entries shown to nobody count too.
func allEntries(t *testing.T, s *Store) []audit.Entry {
	t.Helper()
	rows, err := s.r.QueryContext(testContext(t), `SELECT DISTINCT user_id FROM audit_log`)
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			t.Fatal(err)
		}
		users = append(users, u)
	}
	rows.Close()
	var out []audit.Entry
	for _, u := range users {
		out = append(out, userEntries(t, s, audit.Query{UserID: u})...)
	}
	return out
}

// userEntries returns every entry q selects, following the cursor.
func userEntries(t *testing.T, s *Store, q audit.Query) []audit.Entry {
	t.Helper()
	var out []audit.Entry
	for {
		page, err := s.AuditEntries(testContext(t), q)
		if err != nil {
			t.Fatalf("AuditEntries(%+v): %v", q, err)
		}
		out = append(out, page...)
		size := q.Limit
		if size <= 0 {
			size = audit.DefaultLimit
		}
		if len(page) < size {
			return out
		}
		last := page[len(page)-1]
		q.After = &audit.Cursor{At: last.At, ID: last.ID}
	}
}

// countEntries is how many entries the log holds, whoever sees them.
func countEntries(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.r.QueryRowContext(testContext(t), `SELECT COUNT(*) FROM audit_log`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// change is a Change as the tests write it: old and new as JSON text.
type change struct{ Old, New string }

func changesOf(e audit.Entry) map[string]change {
	out := map[string]change{}
	for _, c := range e.Changes {
		out[c.Field] = change{string(c.Old), string(c.New)}
	}
	return out
}

// wantEntry checks e's action, target, actor and changes.
func wantEntry(t *testing.T, e audit.Entry, action audit.Action, target string, actor audit.Actor, changes map[string]change) {
	t.Helper()
	if e.Action != action || e.Target != target || e.Actor != actor {
		t.Errorf("entry %s %s by %+v, want %s %s by %+v", e.Action, e.Target, e.Actor, action, target, actor)
	}
	if got := changesOf(e); !reflect.DeepEqual(got, changes) {
		t.Errorf("%s changes\n%v\nwant\n%v", action, got, changes)
	}
	if e.ID == "" || e.At.IsZero() {
		t.Errorf("entry without id or time: %+v", e)
	}
}

// lastEntry returns the newest entry of the log and checks that there are
// n in all.
func lastEntry(t *testing.T, s *Store, n int) audit.Entry {
	t.Helper()
	all := allEntries(t, s)
	if len(all) != n {
		for _, e := range all {
			t.Logf("%s %s %s", e.At, e.Action, e.Target)
		}
		t.Fatalf("%d entries, want %d", len(all), n)
	}
	newest := all[0]
	for _, e := range all {
		if e.At.After(newest.At) || e.At.Equal(newest.At) && e.ID > newest.ID {
			newest = e
		}
	}
	return newest
}

func newAPIKey(t *testing.T, user, ws string) keys.APIKey {
	t.Helper()
	_, k, err := keys.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	k.UserID, k.CreatorUserID, k.Role, k.WorkspaceID, k.Name = user, user, keys.RoleStandard, ws, "ci"
	k.CreatedAt = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return k
}

// testAuditKeys: a key's life over the API, each step one entry with the
// actor as given, the changed fields' old and new values and never the
// key's secret or hash.
func testAuditKeys(t *testing.T, b backend) {
	s := b.store(t)
	ctx := asActor(t, apiActor)
	mustUser(t, s, "alice")
	ws := mustWorkspace(t, s, "alice", "team")
	n := countEntries(t, s)

	k := newAPIKey(t, "alice", ws.ID)
	exp := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	limit := money.Micros(5_000_000)
	k.ExpiresAt, k.Limit, k.LimitReset, k.Models = &exp, &limit, keys.ResetMonthly, []string{"openai/gpt-4o"}
	if err := s.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	n++
	wantEntry(t, lastEntry(t, s, n), audit.KeyCreate, k.ID, apiActor, map[string]change{
		"name": {"null", `"ci"`}, "role": {"null", `"standard"`}, "workspace_id": {"null", `"` + ws.ID + `"`},
		"models": {"null", `["openai/gpt-4o"]`}, "limit": {"null", "5"}, "limit_reset": {"null", `"monthly"`},
		"include_byok_in_limit": {"null", "false"}, "expires_at": {"null", `"2030-01-02T03:04:05Z"`},
		"disabled": {"null", "false"},
	})

	at := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	newLimit := money.Micros(7_500_000)
	if _, err := s.UpdateKey(ctx, "alice", k.ID, keys.UpdateRequest{
		Name:  keys.Optional[string]{Set: true, Value: "deploy"},
		Limit: keys.Optional[*money.Micros]{Set: true, Value: &newLimit},
		// Set to what it is: not a change.
		IncludeBYOKInLimit: keys.Optional[bool]{Set: true, Value: false},
	}, at); err != nil {
		t.Fatal(err)
	}
	n++
	wantEntry(t, lastEntry(t, s, n), audit.KeyUpdate, k.ID, apiActor, map[string]change{
		"name": {`"ci"`, `"deploy"`}, "limit": {"5", "7.5"},
	})

	for _, step := range []struct {
		disabled bool
		action   audit.Action
		change   change
	}{{true, audit.KeyDisable, change{"false", "true"}}, {false, audit.KeyEnable, change{"true", "false"}}} {
		if _, err := s.UpdateKey(ctx, "alice", k.ID, keys.UpdateRequest{
			Disabled: keys.Optional[bool]{Set: true, Value: step.disabled}}, at); err != nil {
			t.Fatal(err)
		}
		n++
		wantEntry(t, lastEntry(t, s, n), step.action, k.ID, apiActor, map[string]change{"disabled": step.change})
	}

	if err := s.DeleteKey(ctx, "alice", k.ID, at); err != nil {
		t.Fatal(err)
	}
	n++
	deleted := lastEntry(t, s, n)
	if deleted.Action != audit.KeyDelete || deleted.Target != k.ID || deleted.Actor != apiActor ||
		changesOf(deleted)["name"] != (change{`"deploy"`, "null"}) {
		t.Errorf("delete entry %+v", deleted)
	}

	// Refused changes record nothing.
	if err := s.DeleteKey(ctx, "alice", k.ID, at); !errors.Is(err, keys.ErrKeyNotFound) {
		t.Fatalf("delete again: %v", err)
	}
	mgmt := mustRoleKey(t, s, "alice", keys.RoleManagement, "", at)
	n++
	if _, err := s.UpdateKey(ctx, "alice", mgmt.ID, keys.UpdateRequest{Name: keys.Optional[string]{Set: true, Value: "x"}}, at); !errors.Is(err, keys.ErrManagedByCLI) {
		t.Fatalf("update a management key: %v", err)
	}
	lastEntry(t, s, n)

	for _, e := range allEntries(t, s) {
		for _, c := range e.Changes {
			for _, text := range []string{string(c.Old), string(c.New)} {
				if strings.Contains(text, fmt.Sprintf("%x", k.Hash[:8])) || strings.Contains(text, k.Label) {
					t.Errorf("%s %s records the key's secret material: %s", e.Action, c.Field, text)
				}
			}
			if c.Field == "hash" || c.Field == "label" || c.Field == "secret" {
				t.Errorf("%s records field %s", e.Action, c.Field)
			}
		}
	}
}

// testAuditKeysCLI: the CLI acts with no user of its own, so its entries
// are shown to the key's user, with no acting key; a change with no actor
// at all is the system's.
func testAuditKeysCLI(t *testing.T, b backend) {
	s := b.store(t)
	mustUser(t, s, "alice")
	at := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	cli := audit.Actor{Via: "cli keys create"}
	k := newAPIKey(t, "alice", "")
	k.Role = keys.RoleManagement
	if err := s.CreateKey(asActor(t, cli), k); err != nil {
		t.Fatal(err)
	}
	shown := cli
	shown.UserID = "alice"
	wantEntry(t, lastEntry(t, s, 1), audit.KeyCreate, k.ID, shown, map[string]change{
		"name": {"null", `"ci"`}, "role": {"null", `"management"`}, "include_byok_in_limit": {"null", "false"},
		"disabled": {"null", "false"},
	})
	if got := userEntries(t, s, audit.Query{UserID: "alice"}); len(got) != 1 {
		t.Fatalf("alice sees %d entries, want her key's creation", len(got))
	}

	disable := audit.Actor{Via: "cli keys disable"}
	if err := s.SetKeyDisabled(asActor(t, disable), k.ID, true, at); err != nil {
		t.Fatal(err)
	}
	shown = disable
	shown.UserID = "alice"
	wantEntry(t, lastEntry(t, s, 2), audit.KeyDisable, k.ID, shown, map[string]change{"disabled": {"false", "true"}})

	// Already disabled: the command ran, nothing changed.
	if err := s.SetKeyDisabled(asActor(t, disable), k.ID, true, at); err != nil {
		t.Fatal(err)
	}
	wantEntry(t, lastEntry(t, s, 3), audit.KeyDisable, k.ID, shown, map[string]change{})

	if err := s.SetKeyDisabled(testContext(t), k.ID, false, at); err != nil {
		t.Fatal(err)
	}
	system := audit.System
	system.UserID = "alice"
	wantEntry(t, lastEntry(t, s, 4), audit.KeyEnable, k.ID, system, map[string]change{"disabled": {"true", "false"}})

	remove := audit.Actor{Via: "cli keys delete"}
	if err := s.RemoveKey(asActor(t, remove), k.ID, at); err != nil {
		t.Fatal(err)
	}
	shown = remove
	shown.UserID = "alice"
	if e := lastEntry(t, s, 5); e.Action != audit.KeyDelete || e.Target != k.ID || e.Actor != shown {
		t.Errorf("remove entry %+v", e)
	}
	if err := s.RemoveKey(asActor(t, remove), k.ID, at); !errors.Is(err, keys.ErrKeyNotFound) {
		t.Fatalf("remove again: %v", err)
	}
	if err := s.SetKeyDisabled(asActor(t, disable), k.ID, true, at); !errors.Is(err, keys.ErrKeyNotFound) {
		t.Fatalf("disable a removed key: %v", err)
	}
	lastEntry(t, s, 5)
}

// testAuditKeyReplay: an idempotent replay of a key's creation creates
// nothing and records nothing.
func testAuditKeyReplay(t *testing.T, b backend) {
	s := b.store(t)
	ctx := asActor(t, apiActor)
	mustUser(t, s, "alice")
	k := newAPIKey(t, "alice", "")
	idem := &keys.Idempotency{UserID: "alice", Key: "retry-1", RequestHash: "h", KeyID: k.ID, Sealed: []byte("sealed")}
	if prior, err := s.CreateKeyOnce(ctx, k, idem); err != nil || prior != nil {
		t.Fatalf("first: %v %v", prior, err)
	}
	if n := countEntries(t, s); n != 1 {
		t.Fatalf("%d entries after the creation, want 1", n)
	}
	again := newAPIKey(t, "alice", "")
	if prior, err := s.CreateKeyOnce(ctx, again, idem); err != nil || prior == nil || prior.KeyID != k.ID {
		t.Fatalf("replay: %+v %v", prior, err)
	}
	if n := countEntries(t, s); n != 1 {
		t.Fatalf("%d entries after the replay, want 1", n)
	}
	for _, e := range allEntries(t, s) {
		if strings.Contains(fmt.Sprint(e.Changes), "sealed") {
			t.Errorf("entry records the sealed secret: %+v", e)
		}
	}
}

// testAuditProviderKeys: a provider key's life over the API; its secret
// appears only as a changed field with no values.
func testAuditProviderKeys(t *testing.T, b backend) {
	s := b.store(t)
	ctx := asActor(t, apiActor)
	mustUser(t, s, "alice")
	ws := mustWorkspace(t, s, "alice", "team")
	n := countEntries(t, s)
	name := "prod"
	k := keys.ProviderKey{ID: uuid.NewString(), UserID: "alice", WorkspaceID: ws.ID, Provider: "openai",
		Name: &name, Label: "sk-...WXYZ", Sealed: []byte("sealed-secret-1"), SortOrder: 2,
		CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	if err := s.CreateProviderKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	n++
	wantEntry(t, lastEntry(t, s, n), audit.ProviderKeyCreate, k.ID, apiActor, map[string]change{
		"provider": {"null", `"openai"`}, "workspace_id": {"null", `"` + ws.ID + `"`}, "name": {"null", `"prod"`},
		"disabled": {"null", "false"}, "is_byok_only": {"null", "false"}, "is_fallback": {"null", "false"},
		"is_required": {"null", "false"}, "sort_order": {"null", "2"}, "key": {"null", "null"},
	})

	at := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	if _, err := s.UpdateProviderKey(ctx, "alice", k.ID, keys.ProviderKeyFields{
		Disabled:      keys.Optional[bool]{Set: true, Value: true},
		AllowedModels: keys.Optional[[]string]{Set: true, Value: []string{"openai/gpt-4o"}},
		SortOrder:     keys.Optional[int]{Set: true, Value: 2},
	}, &keys.SealedSecret{Sealed: []byte("sealed-secret-2"), Label: "sk-...ABCD"}, at); err != nil {
		t.Fatal(err)
	}
	n++
	wantEntry(t, lastEntry(t, s, n), audit.ProviderKeyUpdate, k.ID, apiActor, map[string]change{
		"disabled": {"false", "true"}, "allowed_models": {"null", `["openai/gpt-4o"]`}, "key": {"null", "null"},
	})

	if _, err := s.UpdateProviderKey(ctx, "bob", k.ID, keys.ProviderKeyFields{
		Disabled: keys.Optional[bool]{Set: true, Value: false}}, nil, at); !errors.Is(err, keys.ErrProviderKeyNotFound) {
		t.Fatalf("another user's update: %v", err)
	}
	if err := s.DeleteProviderKey(ctx, "alice", k.ID); err != nil {
		t.Fatal(err)
	}
	n++
	deleted := lastEntry(t, s, n)
	if deleted.Action != audit.ProviderKeyDelete || deleted.Target != k.ID ||
		changesOf(deleted)["provider"] != (change{`"openai"`, "null"}) {
		t.Errorf("delete entry %+v", deleted)
	}
	if err := s.DeleteProviderKey(ctx, "alice", k.ID); !errors.Is(err, keys.ErrProviderKeyNotFound) {
		t.Fatalf("delete again: %v", err)
	}
	lastEntry(t, s, n)
	for _, e := range allEntries(t, s) {
		text := fmt.Sprint(e.Changes)
		if strings.Contains(text, "sealed") || strings.Contains(text, "WXYZ") || strings.Contains(text, "ABCD") {
			t.Errorf("entry records secret material: %s", text)
		}
	}
}

// testAuditProviderKeysCLI: `gateway byok set` first creates the key, then
// replaces its secret; both entries are shown to the workspace's owner.
func testAuditProviderKeysCLI(t *testing.T, b backend) {
	s := b.store(t)
	mustUser(t, s, "alice")
	ws := mustWorkspace(t, s, "alice", "team")
	n := countEntries(t, s)
	cli := audit.Actor{Via: "cli byok set"}
	ctx := asActor(t, cli)
	if err := s.PutProviderKey(ctx, ws.ID, "openai", []byte("sealed-1"), "sk-...1111"); err != nil {
		t.Fatal(err)
	}
	n++
	first := lastEntry(t, s, n)
	shown := cli
	shown.UserID = "alice"
	if first.Action != audit.ProviderKeyCreate || first.Actor != shown || changesOf(first)["key"] != (change{"null", "null"}) {
		t.Errorf("first set: %+v", first)
	}
	if err := s.PutProviderKey(ctx, ws.ID, "openai", []byte("sealed-2"), "sk-...2222"); err != nil {
		t.Fatal(err)
	}
	n++
	wantEntry(t, lastEntry(t, s, n), audit.ProviderKeyUpdate, first.Target, shown, map[string]change{"key": {"null", "null"}})
	if _, err := uuid.Parse(first.Target); err != nil {
		t.Errorf("target %q is not the provider key's id", first.Target)
	}
}

// testAuditWorkspaces: a workspace's life; a replayed creation and an
// empty update record nothing.
func testAuditWorkspaces(t *testing.T, b backend) {
	s := b.store(t)
	ctx := asActor(t, apiActor)
	mustUser(t, s, "alice")
	w := newWorkspace("alice", "team")
	idem := &workspace.Idempotency{UserID: "alice", Scope: workspace.ScopeCreate, Key: "k1", RequestHash: "h"}
	if prior, err := s.CreateWorkspace(ctx, w, idem); err != nil || prior != nil {
		t.Fatalf("create: %v %v", prior, err)
	}
	e := lastEntry(t, s, 1)
	c := changesOf(e)
	if e.Action != audit.WorkspaceCreate || e.Target != w.ID || e.Actor != apiActor ||
		c["slug"] != (change{"null", `"team"`}) || c["name"] != (change{"null", `"Workspace team"`}) ||
		c["io_logging_sampling_rate"] != (change{"null", "1"}) {
		t.Errorf("create entry %+v", e)
	}
	if _, ok := c["default_text_model"]; ok {
		t.Errorf("a field created without a value is recorded: %+v", c)
	}
	if prior, err := s.CreateWorkspace(ctx, newWorkspace("alice", "team"), idem); err != nil || prior == nil {
		t.Fatalf("replay: %v %v", prior, err)
	}
	lastEntry(t, s, 1)

	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	model := "openai/gpt-4o"
	if _, _, err := s.UpdateWorkspace(ctx, "alice", workspace.Ref{Slug: "team"}, workspace.UpdateRequest{
		Slug:             workspace.Optional[string]{Set: true, Value: "crew"},
		DefaultTextModel: workspace.Optional[*string]{Set: true, Value: &model},
		Name:             workspace.Optional[string]{Set: true, Value: "Workspace team"},
	}, at, nil); err != nil {
		t.Fatal(err)
	}
	wantEntry(t, lastEntry(t, s, 2), audit.WorkspaceUpdate, w.ID, apiActor, map[string]change{
		"slug": {`"team"`, `"crew"`}, "default_text_model": {"null", `"openai/gpt-4o"`},
	})
	if _, _, err := s.UpdateWorkspace(ctx, "alice", workspace.Ref{ID: w.ID}, workspace.UpdateRequest{}, at, nil); err != nil {
		t.Fatal(err)
	}
	lastEntry(t, s, 2)
	if _, _, err := s.UpdateWorkspace(ctx, "bob", workspace.Ref{ID: w.ID}, workspace.UpdateRequest{
		Name: workspace.Optional[string]{Set: true, Value: "x"}}, at, nil); !errors.Is(err, workspace.ErrNotFound) {
		t.Fatalf("bob updates alice's workspace: %v", err)
	}
	lastEntry(t, s, 2)

	if err := s.DeleteWorkspace(ctx, "alice", workspace.Ref{ID: w.ID}); err != nil {
		t.Fatal(err)
	}
	e = lastEntry(t, s, 3)
	if e.Action != audit.WorkspaceDelete || e.Target != w.ID || changesOf(e)["slug"] != (change{`"crew"`, "null"}) {
		t.Errorf("delete entry %+v", e)
	}
	def := mustWorkspace(t, s, "alice", workspace.DefaultSlug)
	var refused *workspace.NotDeletableError
	if err := s.DeleteWorkspace(ctx, "alice", workspace.Ref{ID: def.ID}); !errors.As(err, &refused) {
		t.Fatalf("delete the default workspace: %v", err)
	}
	// The default's creation with no actor is the system's, shown to alice.
	system := audit.System
	system.UserID = "alice"
	if e := lastEntry(t, s, 4); e.Action != audit.WorkspaceCreate || e.Actor != system || e.Target != def.ID {
		t.Errorf("system entry %+v", e)
	}
}

// testAuditWorkspaceConcurrentUpdates: updates of different fields racing
// each other both land, and each entry's old value is the one its update
// replaced.
func testAuditWorkspaceConcurrentUpdates(t *testing.T, b backend) {
	s := b.store(t)
	mustUser(t, s, "alice")
	w := mustWorkspace(t, s, "alice", "team")
	const rounds = 10
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	errs := make(chan error, 2*rounds)
	for i := range rounds {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, _, err := s.UpdateWorkspace(asActor(t, apiActor), "alice", workspace.Ref{ID: w.ID}, workspace.UpdateRequest{
				Name: workspace.Optional[string]{Set: true, Value: fmt.Sprintf("name %d", i)}}, at, nil)
			errs <- err
		}()
		go func() {
			defer wg.Done()
			_, _, err := s.UpdateWorkspace(asActor(t, apiActor), "alice", workspace.Ref{ID: w.ID}, workspace.UpdateRequest{
				IOLoggingSamplingRate: workspace.Optional[float64]{Set: true, Value: float64(i+1) / 100}}, at, nil)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.WorkspaceByID(testContext(t), "alice", w.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Each field's entries, oldest first, chain from its first value to the
	// stored one: every old value is the previous entry's new value.
	entries := userEntries(t, s, audit.Query{UserID: "alice", Target: w.ID, Action: audit.WorkspaceUpdate, Limit: 7})
	if len(entries) != 2*rounds {
		t.Fatalf("%d update entries, want %d", len(entries), 2*rounds)
	}
	last := map[string]string{"name": `"Workspace team"`, "io_logging_sampling_rate": "1"}
	for i := len(entries) - 1; i >= 0; i-- {
		for _, c := range entries[i].Changes {
			if prev, ok := last[c.Field]; !ok || prev != string(c.Old) {
				t.Fatalf("entry %d: %s from %s, but the previous value was %s", i, c.Field, c.Old, prev)
			}
			last[c.Field] = string(c.New)
		}
		if len(entries[i].Changes) > 1 {
			t.Errorf("entry %d records fields its update did not set: %+v", i, entries[i].Changes)
		}
	}
	if want := fmt.Sprintf("%q", got.Name); last["name"] != want {
		t.Errorf("last recorded name %s, stored %s", last["name"], want)
	}
	if want := fmt.Sprint(got.IOLoggingSamplingRate); last["io_logging_sampling_rate"] != want {
		t.Errorf("last recorded rate %s, stored %s", last["io_logging_sampling_rate"], want)
	}
}

// testAuditBudgets: budget.set and budget.delete target the workspace, the
// changed field being the interval.
func testAuditBudgets(t *testing.T, b backend) {
	s := b.store(t)
	ctx := asActor(t, apiActor)
	mustUser(t, s, "alice")
	ws := mustWorkspace(t, s, "alice", "team")
	n := countEntries(t, s)
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	put := func(iv spend.Interval, limit money.Micros, byok *bool) error {
		_, _, err := s.PutBudget(ctx, spend.Budget{ID: uuid.NewString(), WorkspaceID: ws.ID, Interval: iv, Limit: limit,
			CreatedAt: at, UpdatedAt: at}, byok, func(set map[spend.Interval]money.Micros) error {
			return spend.CheckOrder(set, iv, limit)
		})
		return err
	}
	if err := put(spend.Weekly, 100_000_000, nil); err != nil {
		t.Fatal(err)
	}
	n++
	wv := string(spend.Weekly)
	wantEntry(t, lastEntry(t, s, n), audit.BudgetSet, ws.ID, apiActor, map[string]change{wv: {"null", "100"}})
	yes := true
	if err := put(spend.Weekly, 150_000_000, &yes); err != nil {
		t.Fatal(err)
	}
	n++
	wantEntry(t, lastEntry(t, s, n), audit.BudgetSet, ws.ID, apiActor, map[string]change{
		wv: {"100", "150"}, "include_byok_in_budgets": {"false", "true"}})
	if err := put(spend.Daily, 150_000_000, nil); !errors.Is(err, spend.ErrOrder) {
		t.Fatalf("refused budget: %v", err)
	}
	lastEntry(t, s, n)

	if err := s.DeleteBudget(ctx, ws.ID, spend.Weekly); err != nil {
		t.Fatal(err)
	}
	n++
	wantEntry(t, lastEntry(t, s, n), audit.BudgetDelete, ws.ID, apiActor, map[string]change{wv: {"150", "null"}})
	if err := s.DeleteBudget(ctx, ws.ID, spend.Weekly); !errors.Is(err, spend.ErrNoBudget) {
		t.Fatalf("delete again: %v", err)
	}
	lastEntry(t, s, n)
}

// testAuditSignOut: a sign-out is recorded against the signed-in key; a
// second sign-out of the same session records nothing.
func testAuditSignOut(t *testing.T, b backend) {
	s := b.store(t)
	actor := apiActor
	actor.Via = "console POST /console/sign-out"
	ctx := asActor(t, actor)
	exp := time.Now().Add(time.Hour)
	for range 2 {
		if err := s.SignOut(ctx, "session-1", exp); err != nil {
			t.Fatal(err)
		}
	}
	wantEntry(t, lastEntry(t, s, 1), audit.ConsoleSignOut, actor.KeyHash, actor, map[string]change{})
}

// testAuditQuery: a user's entries page newest first by (at, id) through
// the cursor, filters match exactly, since bounds from below, and no other
// user's entry is ever seen.
func testAuditQuery(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	base := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	actions := []audit.Action{audit.KeyCreate, audit.KeyUpdate, audit.ConsoleSignIn}
	var all []audit.Entry
	for i := range 30 {
		e := audit.Entry{
			// Three entries share each instant, so the id decides among them.
			At:     base.Add(time.Duration(i/3) * time.Minute),
			Actor:  audit.Actor{UserID: "alice", KeyHash: fmt.Sprintf("key%d", i%2), Via: "v", ClientAddr: "a", RequestID: "r"},
			Action: actions[i%3],
			Target: fmt.Sprintf("target%d", i%4),
			Changes: []audit.Change{
				{Field: "name", Old: []byte(`"a"`), New: []byte(fmt.Sprintf(`"n%d"`, i))},
			},
		}
		if err := s.RecordAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordAudit(ctx, audit.Entry{At: e.At, Actor: audit.Actor{UserID: "bob", KeyHash: "key0"},
			Action: e.Action, Target: e.Target}); err != nil {
			t.Fatal(err)
		}
		all = append(all, e)
	}
	got := userEntries(t, s, audit.Query{UserID: "alice", Limit: 4})
	if len(got) != len(all) {
		t.Fatalf("paged %d entries, want %d", len(got), len(all))
	}
	seen := map[string]bool{}
	for i, e := range got {
		if e.Actor.UserID != "alice" {
			t.Fatalf("alice sees %+v", e)
		}
		if seen[e.ID] {
			t.Fatalf("entry %s twice", e.ID)
		}
		seen[e.ID] = true
		if i > 0 {
			p := got[i-1]
			if e.At.After(p.At) || e.At.Equal(p.At) && e.ID >= p.ID {
				t.Fatalf("entry %d (%s %s) not older than the one before (%s %s)", i, e.At, e.ID, p.At, p.ID)
			}
		}
	}
	if first := got[0]; !first.At.Equal(base.Add(9*time.Minute)) || first.Actor.Via != "v" ||
		len(first.Changes) != 1 || first.Changes[0].Field != "name" {
		t.Errorf("newest %+v", first)
	}

	count := func(q audit.Query, want func(audit.Entry) bool) {
		t.Helper()
		got := userEntries(t, s, q)
		n := 0
		for _, e := range all {
			if want(e) {
				n++
			}
		}
		if len(got) != n {
			t.Errorf("%+v: %d entries, want %d", q, len(got), n)
		}
		for _, e := range got {
			if !want(e) || e.Actor.UserID != q.UserID {
				t.Errorf("%+v selected %+v", q, e)
			}
		}
	}
	count(audit.Query{UserID: "alice", Target: "target1", Limit: 3}, func(e audit.Entry) bool { return e.Target == "target1" })
	count(audit.Query{UserID: "alice", Actor: "key1", Limit: 5}, func(e audit.Entry) bool { return e.Actor.KeyHash == "key1" })
	count(audit.Query{UserID: "alice", Action: audit.ConsoleSignIn, Limit: 2}, func(e audit.Entry) bool { return e.Action == audit.ConsoleSignIn })
	since := base.Add(7 * time.Minute)
	count(audit.Query{UserID: "alice", Since: since, Limit: 100}, func(e audit.Entry) bool { return !e.At.Before(since) })
	count(audit.Query{UserID: "alice", Target: "target2", Action: audit.KeyCreate, Actor: "key0", Since: base.Add(time.Minute), Limit: 1},
		func(e audit.Entry) bool {
			return e.Target == "target2" && e.Action == audit.KeyCreate && e.Actor.KeyHash == "key0" && !e.At.Before(base.Add(time.Minute))
		})
	count(audit.Query{UserID: "carol", Limit: 10}, func(audit.Entry) bool { return false })

	page, err := s.AuditEntries(ctx, audit.Query{UserID: "alice", Limit: audit.MaxLimit + 50})
	if err != nil || len(page) != len(all) {
		t.Fatalf("a page past MaxLimit: %d, %v", len(page), err)
	}
	page, err = s.AuditEntries(ctx, audit.Query{UserID: "alice"})
	if err != nil || len(page) != len(all) {
		t.Fatalf("default page: %d, %v", len(page), err)
	}
	if _, err := s.AuditEntries(ctx, audit.Query{}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("no user: %v, want ErrInvalidArgument", err)
	}
	if err := s.RecordAudit(ctx, audit.Entry{Action: "key.explode", Actor: audit.Actor{UserID: "alice"}}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("unknown action: %v, want ErrInvalidArgument", err)
	}
}

// testAuditPrune: PruneAudit deletes at most its limit of the entries
// older than the cutoff, and nothing newer.
func testAuditPrune(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	cutoff := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		for _, at := range []time.Time{cutoff.Add(-time.Duration(i+1) * time.Hour), cutoff.Add(time.Duration(i) * time.Hour)} {
			if err := s.RecordAudit(ctx, audit.Entry{At: at, Actor: audit.Actor{UserID: "alice"},
				Action: audit.ConsoleSignIn, Target: "k"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, want := range []int{2, 2, 1, 0} {
		n, err := s.PruneAudit(ctx, cutoff, 2)
		if err != nil || n != want {
			t.Fatalf("PruneAudit = %d, %v; want %d", n, err, want)
		}
	}
	left := userEntries(t, s, audit.Query{UserID: "alice", Limit: 100})
	if len(left) != 5 {
		t.Fatalf("%d entries left, want the 5 at or after the cutoff", len(left))
	}
	for _, e := range left {
		if e.At.Before(cutoff) {
			t.Errorf("entry of %s survived", e.At)
		}
	}
}

// breakAuditLog makes every audit insert fail until the test ends, by
// moving the table away.
func breakAuditLog(t *testing.T, s *Store) {
	t.Helper()
	if _, err := s.w.ExecContext(testContext(t), `ALTER TABLE audit_log RENAME TO audit_log_away`); err != nil {
		t.Fatal(err)
	}
}

// testAuditFailedWriteChangesNothing: when the entry cannot be written,
// the change it records is not made and the caller gets the error.
func testAuditFailedWrite(t *testing.T, b backend) {
	s := b.store(t)
	ctx := asActor(t, apiActor)
	mustUser(t, s, "alice")
	ws := mustWorkspace(t, s, "alice", "team")
	k := mustRoleKey(t, s, "alice", keys.RoleStandard, ws.ID, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	other := mustRoleKey(t, s, "alice", keys.RoleManagement, "", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	pk := keys.ProviderKey{ID: uuid.NewString(), UserID: "alice", WorkspaceID: ws.ID, Provider: "openai",
		Label: "l", Sealed: []byte("s"), CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	if err := s.CreateProviderKey(ctx, pk); err != nil {
		t.Fatal(err)
	}
	empty := mustWorkspace(t, s, "alice", "empty")
	at := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	budget := func() error {
		_, _, err := s.PutBudget(ctx, spend.Budget{ID: uuid.NewString(), WorkspaceID: ws.ID, Interval: spend.Weekly,
			Limit: 5, CreatedAt: at, UpdatedAt: at}, nil, func(map[spend.Interval]money.Micros) error { return nil })
		return err
	}
	if err := budget(); err != nil {
		t.Fatal(err)
	}
	keyBefore, _ := s.KeyByID(ctx, k.ID)
	otherBefore, _ := s.KeyByID(ctx, other.ID)
	pkBefore, _ := s.UserProviderKey(ctx, "alice", pk.ID)
	wsBefore, _ := s.WorkspaceByID(ctx, "alice", ws.ID)
	budgetsBefore, _, _ := s.Budgets(ctx, ws.ID)
	breakAuditLog(t, s)

	newKey := newAPIKey(t, "alice", "")
	newWS := newWorkspace("alice", "new")
	for _, op := range []struct {
		name string
		run  func() error
	}{
		{"CreateKey", func() error { return s.CreateKey(ctx, newKey) }},
		{"UpdateKey", func() error {
			_, err := s.UpdateKey(ctx, "alice", k.ID, keys.UpdateRequest{Name: keys.Optional[string]{Set: true, Value: "x"}}, at)
			return err
		}},
		{"DisableKey", func() error {
			_, err := s.UpdateKey(ctx, "alice", k.ID, keys.UpdateRequest{Disabled: keys.Optional[bool]{Set: true, Value: true}}, at)
			return err
		}},
		{"DeleteKey", func() error { return s.DeleteKey(ctx, "alice", k.ID, at) }},
		{"SetKeyDisabled", func() error { return s.SetKeyDisabled(ctx, other.ID, true, at) }},
		{"RemoveKey", func() error { return s.RemoveKey(ctx, other.ID, at) }},
		{"CreateProviderKey", func() error {
			return s.CreateProviderKey(ctx, keys.ProviderKey{ID: uuid.NewString(), UserID: "alice", WorkspaceID: ws.ID,
				Provider: "openai", Label: "l", Sealed: []byte("s"), CreatedAt: at})
		}},
		{"UpdateProviderKey", func() error {
			_, err := s.UpdateProviderKey(ctx, "alice", pk.ID, keys.ProviderKeyFields{Disabled: keys.Optional[bool]{Set: true, Value: true}}, nil, at)
			return err
		}},
		{"DeleteProviderKey", func() error { return s.DeleteProviderKey(ctx, "alice", pk.ID) }},
		{"PutProviderKey", func() error { return s.PutProviderKey(ctx, ws.ID, "anthropic", []byte("s"), "l") }},
		{"CreateWorkspace", func() error { _, err := s.CreateWorkspace(ctx, newWS, nil); return err }},
		{"UpdateWorkspace", func() error {
			_, _, err := s.UpdateWorkspace(ctx, "alice", workspace.Ref{ID: ws.ID}, workspace.UpdateRequest{
				Name: workspace.Optional[string]{Set: true, Value: "renamed"}}, at, nil)
			return err
		}},
		{"DeleteWorkspace", func() error { return s.DeleteWorkspace(ctx, "alice", workspace.Ref{ID: empty.ID}) }},
		{"PutBudget", budget},
		{"DeleteBudget", func() error { return s.DeleteBudget(ctx, ws.ID, spend.Weekly) }},
		{"SignOut", func() error { return s.SignOut(ctx, "session-1", at.Add(time.Hour)) }},
		{"RecordAudit", func() error {
			return s.RecordAudit(ctx, audit.Entry{Actor: apiActor, Action: audit.ConsoleSignIn, Target: k.ID})
		}},
	} {
		if err := op.run(); err == nil {
			t.Errorf("%s succeeded with no audit log", op.name)
		}
	}

	if _, err := s.KeyByID(ctx, newKey.ID); !errors.Is(err, keys.ErrKeyNotFound) {
		t.Errorf("key created without its entry: %v", err)
	}
	for _, before := range []keys.APIKey{keyBefore, otherBefore} {
		if after, err := s.KeyByID(ctx, before.ID); err != nil || !reflect.DeepEqual(after, before) {
			t.Errorf("key changed without its entry: %+v, %v; was %+v", after, err, before)
		}
	}
	if after, err := s.UserProviderKey(ctx, "alice", pk.ID); err != nil || !reflect.DeepEqual(after, pkBefore) {
		t.Errorf("provider key changed without its entry: %+v, %v", after, err)
	}
	if list, _, err := s.ListProviderKeys(ctx, "alice", keys.ProviderKeyQuery{Limit: 10}); err != nil || len(list) != 1 {
		t.Errorf("provider keys %d, %v; want the one made before", len(list), err)
	}
	if after, err := s.WorkspaceByID(ctx, "alice", ws.ID); err != nil || !reflect.DeepEqual(after, wsBefore) {
		t.Errorf("workspace changed without its entry: %+v, %v", after, err)
	}
	if _, err := s.WorkspaceByID(ctx, "alice", newWS.ID); !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("workspace created without its entry: %v", err)
	}
	if _, err := s.WorkspaceByID(ctx, "alice", empty.ID); err != nil {
		t.Errorf("workspace deleted without its entry: %v", err)
	}
	if after, _, err := s.Budgets(ctx, ws.ID); err != nil || !reflect.DeepEqual(after, budgetsBefore) {
		t.Errorf("budgets changed without their entry: %+v, %v", after, err)
	}
	if out, err := s.SignedOut(ctx, "session-1"); err != nil || out {
		t.Errorf("signed out without its entry: %v, %v", out, err)
	}
}

// testAuditOutage: an audit write the database refuses for want of
// resources is an outage (outage.ErrUnavailable, a 503), like any other
// write of the store, and the change is not made. PostgreSQL only: a
// trigger raises disk_full on the audit insert alone; SQLite has no way to
// make one statement meet an outage, and the rollback itself is
// FailedWriteChangesNothing's.
func testAuditOutage(t *testing.T, b backend) {
	if b.driver != DriverPostgres {
		t.Skip("no per-statement outage on SQLite; the rollback is covered by FailedWriteChangesNothing")
	}
	s := b.store(t)
	ctx := asActor(t, apiActor)
	mustUser(t, s, "alice")
	k := mustRoleKey(t, s, "alice", keys.RoleStandard, "", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if _, err := s.w.ExecContext(testContext(t), `CREATE FUNCTION audit_log_full() RETURNS trigger AS $$
		BEGIN RAISE EXCEPTION 'no space left' USING ERRCODE = 'disk_full'; END $$ LANGUAGE plpgsql;
		CREATE TRIGGER audit_log_full BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_log_full()`); err != nil {
		t.Fatal(err)
	}
	_, err := s.UpdateKey(ctx, "alice", k.ID, keys.UpdateRequest{Disabled: keys.Optional[bool]{Set: true, Value: true}},
		time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC))
	if !errors.Is(err, outage.ErrUnavailable) {
		t.Fatalf("UpdateKey with the audit log's disk full: %v, want outage.ErrUnavailable", err)
	}
	if after, err := s.KeyByID(testContext(t), k.ID); err != nil || after.Disabled {
		t.Fatalf("key disabled without its entry: %+v, %v", after, err)
	}
}
