package sqlstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy/keys"
	"github.com/google/uuid"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/workspace"
)

// The contract of listing, updating and deleting workspaces; runContract
// runs these on every database.

func set[T any](v T) workspace.Optional[T] { return workspace.Optional[T]{Set: true, Value: v} }

// updateAt is the time the update tests write as updated_at.
var updateAt = time.Date(2026, 9, 1, 8, 0, 0, 123456000, time.UTC)

func mustUpdate(t *testing.T, s *Store, user string, ref workspace.Ref, u workspace.UpdateRequest) workspace.Workspace {
	t.Helper()
	w, prior, err := s.UpdateWorkspace(testContext(t), user, ref, u, updateAt, nil)
	if err != nil || prior != nil {
		t.Fatalf("UpdateWorkspace(%+v) = %v, %v", ref, prior, err)
	}
	return w
}

func testWorkspaceList(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	mustUser(t, s, "bob")
	// Five workspaces, two pairs sharing a created_at: ids break the tie.
	base := time.Date(2026, 8, 18, 12, 0, 0, 0, time.UTC)
	var want []workspace.Workspace
	for i, at := range []time.Time{base.Add(2 * time.Second), base, base, base.Add(time.Second), base.Add(time.Second)} {
		w := newWorkspace("alice", fmt.Sprintf("ws-%d", i))
		w.CreatedAt = at
		if _, err := s.CreateWorkspace(ctx, w, nil); err != nil {
			t.Fatal(err)
		}
		want = append(want, w)
	}
	mustWorkspace(t, s, "bob", "not-alices")
	sortWorkspaces(want)

	all, total, err := s.ListWorkspaces(ctx, "alice", 0, 100)
	if err != nil || total != 5 || !reflect.DeepEqual(all, want) {
		t.Fatalf("ListWorkspaces(0, 100) = %d, %v:\n%+v\nwant\n%+v", total, err, all, want)
	}
	for _, tt := range []struct{ offset, limit, from, to int }{
		{0, 2, 0, 2}, {2, 2, 2, 4}, {4, 2, 4, 5}, {1, 3, 1, 4},
	} {
		page, total, err := s.ListWorkspaces(ctx, "alice", tt.offset, tt.limit)
		if err != nil || total != 5 || !reflect.DeepEqual(page, want[tt.from:tt.to]) {
			t.Errorf("ListWorkspaces(%d, %d) = %d workspaces, total %d, %v; want want[%d:%d]",
				tt.offset, tt.limit, len(page), total, err, tt.from, tt.to)
		}
	}
	page, total, err := s.ListWorkspaces(ctx, "alice", 5, 10)
	if err != nil || total != 5 || len(page) != 0 {
		t.Errorf("page past the end = %d workspaces, total %d, %v; want none, total 5", len(page), total, err)
	}
	page, total, err = s.ListWorkspaces(ctx, "nobody", 0, 10)
	if err != nil || total != 0 || len(page) != 0 {
		t.Errorf("unknown user = %v, %d, %v; want nothing", page, total, err)
	}
	if _, _, err := s.ListWorkspaces(ctx, "alice", -1, 10); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("negative offset = %v, want ErrInvalidArgument", err)
	}
}

// sortWorkspaces orders ws as listing does: created_at, then id.
func sortWorkspaces(ws []workspace.Workspace) {
	for i := 1; i < len(ws); i++ {
		for j := i; j > 0; j-- {
			a, b := ws[j-1], ws[j]
			if a.CreatedAt.Before(b.CreatedAt) || (a.CreatedAt.Equal(b.CreatedAt) && a.ID < b.ID) {
				break
			}
			ws[j-1], ws[j] = b, a
		}
	}
}

func testWorkspaceUpdate(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	mustUser(t, s, "bob")
	w := newWorkspace("alice", "team")
	w.Description = "text"
	w.DefaultTextModel = ptr("x/y")
	w.DefaultProviderSort = ptr("price")
	w.IOLoggingAPIKeyIDs = []string{"k"}
	if _, err := s.CreateWorkspace(ctx, w, nil); err != nil {
		t.Fatal(err)
	}
	mustWorkspace(t, s, "alice", "taken")
	bobs := mustWorkspace(t, s, "bob", "bobs")

	// An empty update writes nothing, updated_at included.
	if got := mustUpdate(t, s, "alice", workspace.Ref{ID: w.ID}, workspace.UpdateRequest{}); !reflect.DeepEqual(got, w) {
		t.Errorf("empty update = %+v, want the workspace unchanged %+v", got, w)
	}

	// Every field, by slug; nulls clear.
	u := workspace.UpdateRequest{
		Name:                            set("Renamed"),
		Slug:                            set("team-2"),
		Description:                     set[*string](nil),
		DefaultTextModel:                set[*string](nil),
		DefaultImageModel:               set(ptr("x/img")),
		DefaultProviderSort:             set[*string](nil),
		IOLoggingAPIKeyIDs:              set([]string{}),
		IOLoggingSamplingRate:           set(0.25),
		IsDataDiscountLoggingEnabled:    set(false),
		IsObservabilityBroadcastEnabled: set(true),
		IsObservabilityIOLoggingEnabled: set(true),
	}
	got := mustUpdate(t, s, "alice", workspace.Ref{Slug: "team"}, u)
	want := w
	want.Name, want.Slug, want.Description = "Renamed", "team-2", ""
	want.DefaultTextModel, want.DefaultImageModel, want.DefaultProviderSort = nil, ptr("x/img"), nil
	want.IOLoggingAPIKeyIDs, want.IOLoggingSamplingRate = []string{}, 0.25
	want.IsDataDiscountLoggingEnabled, want.IsObservabilityBroadcastEnabled, want.IsObservabilityIOLoggingEnabled = false, true, true
	want.UpdatedAt = &updateAt
	if !reflect.DeepEqual(got, want) {
		t.Errorf("update =\n%+v\nwant\n%+v", got, want)
	}
	if read, err := s.WorkspaceByID(ctx, "alice", w.ID); err != nil || !reflect.DeepEqual(read, want) {
		t.Errorf("read after update = %+v, %v", read, err)
	}
	// The old slug is free again; the same slug is no conflict.
	mustWorkspace(t, s, "alice", "team")
	mustUpdate(t, s, "alice", workspace.Ref{ID: w.ID}, workspace.UpdateRequest{Slug: set("team-2")})
	if n := mustUpdate(t, s, "alice", workspace.Ref{ID: w.ID}, workspace.UpdateRequest{IOLoggingAPIKeyIDs: set[[]string](nil)}); n.IOLoggingAPIKeyIDs != nil {
		t.Errorf("null key ids stored as %#v", n.IOLoggingAPIKeyIDs)
	}

	errTests := []struct {
		name string
		user string
		ref  workspace.Ref
		u    workspace.UpdateRequest
		want error
	}{
		{"slug of another workspace", "alice", workspace.Ref{ID: w.ID}, workspace.UpdateRequest{Slug: set("taken")}, workspace.ErrSlugTaken},
		{"another user's workspace", "alice", workspace.Ref{ID: bobs.ID, Slug: "bobs"}, workspace.UpdateRequest{Name: set("x")}, workspace.ErrNotFound},
		{"unknown id", "alice", workspace.Ref{ID: uuid.NewString()}, workspace.UpdateRequest{}, workspace.ErrNotFound},
		{"unknown slug", "alice", workspace.Ref{Slug: "nope"}, workspace.UpdateRequest{}, workspace.ErrNotFound},
		{"malformed id", "alice", workspace.Ref{ID: "not-a-uuid"}, workspace.UpdateRequest{}, workspace.ErrNotFound},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := s.WorkspaceByID(ctx, "alice", w.ID)
			if _, _, err := s.UpdateWorkspace(ctx, tt.user, tt.ref, tt.u, updateAt.Add(time.Hour), nil); !errors.Is(err, tt.want) {
				t.Fatalf("UpdateWorkspace = %v, want %v", err, tt.want)
			}
			if after, _ := s.WorkspaceByID(ctx, "alice", w.ID); !reflect.DeepEqual(after, before) {
				t.Errorf("a refused update changed the workspace: %+v", after)
			}
		})
	}
}

// testWorkspaceUpdateDefault: the default workspace keeps its slug, so
// Default keeps finding it; another workspace may take the slug "default"
// once it is free.
func testWorkspaceUpdateDefault(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	def := mustWorkspace(t, s, "alice", workspace.DefaultSlug)
	other := mustWorkspace(t, s, "alice", "other")
	if _, _, err := s.UpdateWorkspace(ctx, "alice", workspace.Ref{ID: def.ID}, workspace.UpdateRequest{Slug: set("renamed")}, updateAt, nil); !errors.Is(err, workspace.ErrDefaultSlug) {
		t.Fatalf("renaming the default = %v, want ErrDefaultSlug", err)
	}
	// Its other fields change, and "changing" its slug to itself is fine.
	if got := mustUpdate(t, s, "alice", workspace.Ref{Slug: "default"}, workspace.UpdateRequest{Name: set("Main"), Slug: set("default")}); got.Name != "Main" {
		t.Errorf("name = %q", got.Name)
	}
	if _, _, err := s.UpdateWorkspace(ctx, "alice", workspace.Ref{ID: other.ID}, workspace.UpdateRequest{Slug: set("default")}, updateAt, nil); !errors.Is(err, workspace.ErrSlugTaken) {
		t.Errorf("taking the default's slug = %v, want ErrSlugTaken", err)
	}
}

// testWorkspaceUpdateConcurrent: concurrent updates of different fields of
// one workspace all land.
func testWorkspaceUpdateConcurrent(t *testing.T, b backend) {
	s := b.store(t)
	mustUser(t, s, "alice")
	w := mustWorkspace(t, s, "alice", "busy")
	updates := []workspace.UpdateRequest{
		{Name: set("New name")},
		{Description: set(ptr("new description"))},
		{DefaultProviderSort: set(ptr("latency"))},
		{IOLoggingSamplingRate: set(0.5)},
		{IsDataDiscountLoggingEnabled: set(false)},
		{IsObservabilityBroadcastEnabled: set(true)},
		{IsObservabilityIOLoggingEnabled: set(true)},
		{IOLoggingAPIKeyIDs: set([]string{"a", "b"})},
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, len(updates))
	for i, u := range updates {
		wg.Go(func() {
			<-start
			_, _, errs[i] = s.UpdateWorkspace(testContext(t), "alice", workspace.Ref{ID: w.ID}, u, updateAt, nil)
		})
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("UpdateWorkspace: %v", err)
		}
	}
	got, err := s.WorkspaceByID(testContext(t), "alice", w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "New name" || got.Description != "new description" || got.DefaultProviderSort == nil ||
		*got.DefaultProviderSort != "latency" || got.IOLoggingSamplingRate != 0.5 || got.IsDataDiscountLoggingEnabled ||
		!got.IsObservabilityBroadcastEnabled || !got.IsObservabilityIOLoggingEnabled || len(got.IOLoggingAPIKeyIDs) != 2 {
		t.Errorf("after concurrent updates: %+v; a field was lost", got)
	}
}

// testWorkspaceUpdateSlugRace: of many workspaces renamed to one slug at
// once, exactly one gets it.
func testWorkspaceUpdateSlugRace(t *testing.T, b backend) {
	s := b.store(t)
	mustUser(t, s, "alice")
	const n = 8
	ids := make([]string, n)
	for i := range ids {
		ids[i] = mustWorkspace(t, s, "alice", fmt.Sprintf("w-%d", i)).ID
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			<-start
			_, _, errs[i] = s.UpdateWorkspace(testContext(t), "alice", workspace.Ref{ID: ids[i]},
				workspace.UpdateRequest{Slug: set("wanted")}, updateAt, nil)
		})
	}
	close(start)
	wg.Wait()
	if ok, taken := slugRaceOutcome(t, errs); ok != 1 || taken != n-1 {
		t.Errorf("%d renamed, %d ErrSlugTaken; want 1 and %d", ok, taken, n-1)
	}
}

func updateIdem(key, hash string) *workspace.Idempotency {
	return &workspace.Idempotency{UserID: "alice", Scope: workspace.ScopeUpdate, Key: key, RequestHash: hash}
}

func testIdempotencyUpdate(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	mustUser(t, s, "bob")
	w := mustWorkspace(t, s, "alice", "old")
	mustWorkspace(t, s, "alice", "taken")

	first, prior, err := s.UpdateWorkspace(ctx, "alice", workspace.Ref{Slug: "old"},
		workspace.UpdateRequest{Slug: set("new")}, updateAt, updateIdem("k", "h1"))
	if err != nil || prior != nil || first.Slug != "new" {
		t.Fatalf("first update = %+v, %v, %v", first, prior, err)
	}
	// The retry names the old slug, which no longer exists: the record
	// answers before the workspace is looked up.
	_, prior, err = s.UpdateWorkspace(ctx, "alice", workspace.Ref{Slug: "old"},
		workspace.UpdateRequest{Slug: set("new")}, updateAt.Add(time.Minute), updateIdem("k", "h1"))
	if err != nil || prior == nil || prior.RequestHash != "h1" || !reflect.DeepEqual(prior.Workspace, first) {
		t.Fatalf("retry = %+v, %v; want the first answer", prior, err)
	}
	// A creation with the same key is another scope: no replay.
	wc := newWorkspace("alice", "created")
	if prior, err := s.CreateWorkspace(ctx, wc, idemFor("alice", "k", wc)); err != nil || prior != nil {
		t.Errorf("creation with an update's key = %v, %v; want a new workspace", prior, err)
	}
	// A failed update keeps no record, so a retry is decided afresh.
	if _, _, err := s.UpdateWorkspace(ctx, "alice", workspace.Ref{ID: w.ID},
		workspace.UpdateRequest{Slug: set("taken")}, updateAt, updateIdem("k2", "h2")); !errors.Is(err, workspace.ErrSlugTaken) {
		t.Fatalf("update to a taken slug = %v", err)
	}
	if n := count(t, s, `SELECT COUNT(*) FROM idempotency_records WHERE idem_key = $1`, "k2"); n != 0 {
		t.Errorf("%d records kept for a failed update, want 0", n)
	}
	if _, _, err := s.UpdateWorkspace(ctx, "alice", workspace.Ref{ID: w.ID},
		workspace.UpdateRequest{Slug: set("freed")}, updateAt, updateIdem("k2", "h3")); err != nil {
		t.Errorf("retry after a failed update = %v", err)
	}
	// An empty update is recorded too, with the workspace as it was.
	_, prior, err = s.UpdateWorkspace(ctx, "alice", workspace.Ref{ID: w.ID}, workspace.UpdateRequest{}, updateAt, updateIdem("k3", "h4"))
	if err != nil || prior != nil {
		t.Fatal(err)
	}
	mustUpdate(t, s, "alice", workspace.Ref{ID: w.ID}, workspace.UpdateRequest{Name: set("later")})
	_, prior, err = s.UpdateWorkspace(ctx, "alice", workspace.Ref{ID: w.ID}, workspace.UpdateRequest{}, updateAt, updateIdem("k3", "h4"))
	if err != nil || prior == nil || prior.Workspace.Name == "later" {
		t.Errorf("replay of an empty update = %+v, %v; want the answer given then", prior, err)
	}
	if _, _, err := s.UpdateWorkspace(ctx, "bob", workspace.Ref{ID: w.ID}, workspace.UpdateRequest{}, updateAt, updateIdem("k4", "h")); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("record of another user = %v, want ErrInvalidArgument", err)
	}
}

// testIdempotencyLegacyRecords: migration 2 carries creation records of the
// old table over, so a retry across the upgrade is still replayed.
func testIdempotencyLegacyRecords(t *testing.T, b backend) {
	dsn := b.fresh(t)
	s := b.open(t, dsn)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	w := mustWorkspace(t, s, "alice", "before-upgrade")
	body, err := json.Marshal(struct {
		Data workspace.Workspace `json:"data"`
	}{w})
	if err != nil {
		t.Fatal(err)
	}
	// Put the database back to version 1 with one record in the old form.
	for _, q := range []string{
		`DROP TABLE idempotency_records`,
		`DELETE FROM schema_migrations WHERE version = 2`,
	} {
		if _, err := s.w.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := s.w.ExecContext(ctx, `INSERT INTO idempotency (user_id, idem_key, request_hash, status, body, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, "alice", "legacy", "hash", 201, body, s.d.ts(micro(time.Now()))); err != nil {
		t.Fatal(err)
	}
	s2 := b.open(t, dsn)
	retry := newWorkspace("alice", "after-upgrade")
	prior, err := s2.CreateWorkspace(ctx, retry, &workspace.Idempotency{
		UserID: "alice", Scope: workspace.ScopeCreate, Key: "legacy", RequestHash: "hash", Workspace: retry})
	if err != nil || prior == nil || !reflect.DeepEqual(prior.Workspace, w) {
		t.Fatalf("retry after the upgrade = %+v, %v; want the old record's workspace %+v", prior, err, w)
	}
	replayed, _ := json.Marshal(struct {
		Data workspace.Workspace `json:"data"`
	}{prior.Workspace})
	if string(replayed) != string(body) {
		t.Errorf("replayed body\n%s\nwant\n%s", replayed, body)
	}
}

// deleteFixture is a store with alice's workspace "doomed".
func deleteFixture(t *testing.T, b backend) (*Store, workspace.Workspace) {
	s := b.store(t)
	mustUser(t, s, "alice")
	mustUser(t, s, "bob")
	return s, mustWorkspace(t, s, "alice", "doomed")
}

func mustKey(t *testing.T, s *Store, user, wsID string) {
	t.Helper()
	_, k, err := keys.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	k.UserID, k.Role, k.WorkspaceID, k.CreatedAt = user, keys.RoleStandard, wsID, time.Now()
	if err := s.CreateKey(testContext(t), k); err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
}

func mustFile(t *testing.T, s *Store, wsID string) {
	t.Helper()
	ctx := testContext(t)
	res, err := s.Reserve(ctx, wsID, 10, 1<<20, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, res, record(wsID, 10)); err != nil {
		t.Fatal(err)
	}
}

func testWorkspaceDeleteRefusals(t *testing.T, b backend) {
	tests := []struct {
		name  string
		setup func(t *testing.T, s *Store, ws workspace.Workspace)
		want  workspace.NotDeletableError
	}{
		{"files", func(t *testing.T, s *Store, ws workspace.Workspace) {
			mustFile(t, s, ws.ID)
			mustFile(t, s, ws.ID)
		}, workspace.NotDeletableError{Files: 2}},
		{"keys", func(t *testing.T, s *Store, ws workspace.Workspace) {
			mustKey(t, s, "alice", ws.ID)
		}, workspace.NotDeletableError{Keys: 1}},
		{"upload in progress", func(t *testing.T, s *Store, ws workspace.Workspace) {
			if _, err := s.Reserve(testContext(t), ws.ID, 5, 100, time.Minute); err != nil {
				t.Fatal(err)
			}
		}, workspace.NotDeletableError{Uploads: 1}},
		{"all three", func(t *testing.T, s *Store, ws workspace.Workspace) {
			mustFile(t, s, ws.ID)
			mustKey(t, s, "alice", ws.ID)
			mustKey(t, s, "alice", ws.ID)
			if _, err := s.Reserve(testContext(t), ws.ID, 5, 100, time.Minute); err != nil {
				t.Fatal(err)
			}
		}, workspace.NotDeletableError{Files: 1, Keys: 2, Uploads: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ws := deleteFixture(t, b)
			tt.setup(t, s, ws)
			err := s.DeleteWorkspace(testContext(t), "alice", workspace.Ref{Slug: ws.Slug})
			var nd *workspace.NotDeletableError
			if !errors.As(err, &nd) || *nd != tt.want {
				t.Fatalf("DeleteWorkspace = %v, want %+v", err, tt.want)
			}
			if _, err := s.WorkspaceByID(testContext(t), "alice", ws.ID); err != nil {
				t.Errorf("the refused workspace is gone: %v", err)
			}
		})
	}
	t.Run("default", func(t *testing.T) {
		s, _ := deleteFixture(t, b)
		def := mustWorkspace(t, s, "alice", workspace.DefaultSlug)
		err := s.DeleteWorkspace(testContext(t), "alice", workspace.Ref{ID: def.ID})
		var nd *workspace.NotDeletableError
		if !errors.As(err, &nd) || !nd.Default {
			t.Fatalf("DeleteWorkspace(default) = %v, want the default refused", err)
		}
	})
	t.Run("not found", func(t *testing.T) {
		s, ws := deleteFixture(t, b)
		bobs := mustWorkspace(t, s, "bob", "bobs")
		for _, ref := range []workspace.Ref{{ID: bobs.ID}, {Slug: "bobs"}, {ID: uuid.NewString()}, {Slug: "nope"}} {
			if err := s.DeleteWorkspace(testContext(t), "alice", ref); !errors.Is(err, workspace.ErrNotFound) {
				t.Errorf("DeleteWorkspace(%+v) = %v, want ErrNotFound", ref, err)
			}
		}
		if _, err := s.WorkspaceByID(testContext(t), "bob", bobs.ID); err != nil {
			t.Errorf("bob's workspace: %v", err)
		}
		if _, err := s.WorkspaceByID(testContext(t), "alice", ws.ID); err != nil {
			t.Errorf("alice's workspace: %v", err)
		}
	})
}

func testWorkspaceDelete(t *testing.T, b backend) {
	s, ws := deleteFixture(t, b)
	ctx := testContext(t)
	clock := useClock(s)
	// What a delete takes along: an expired reservation, the usage row and
	// a stored provider key.
	stale, err := s.Reserve(ctx, ws.ID, 5, 100, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	clock.advance(time.Minute)
	if err := s.PutProviderKey(ctx, ws.ID, "openai", []byte("sealed"), "sk-...abcd"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteWorkspace(ctx, "alice", workspace.Ref{ID: ws.ID}); err != nil {
		t.Fatalf("DeleteWorkspace: %v", err)
	}
	if _, err := s.WorkspaceByID(ctx, "alice", ws.ID); !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("by id after delete: %v, want ErrNotFound", err)
	}
	if _, err := s.WorkspaceBySlug(ctx, "alice", ws.Slug); !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("by slug after delete: %v, want ErrNotFound", err)
	}
	for _, table := range []string{"quota_reservations", "workspace_usage", "byok_keys"} {
		if n := count(t, s, `SELECT COUNT(*) FROM `+table+` WHERE workspace_id = $1`, ws.ID); n != 0 {
			t.Errorf("%d rows left in %s", n, table)
		}
	}
	if err := s.DeleteWorkspace(ctx, "alice", workspace.Ref{ID: ws.ID}); !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
	// An upload that outlived its reservation cannot commit into the void.
	if err := s.Commit(ctx, stale, record(ws.ID, 5)); !errors.Is(err, files.ErrReservationNotFound) {
		t.Errorf("Commit after the delete: %v, want ErrReservationNotFound", err)
	}
	if _, err := s.Reserve(ctx, ws.ID, 1, 100, time.Minute); !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("Reserve in the deleted workspace: %v, want ErrNotFound", err)
	}
	again := mustWorkspace(t, s, "alice", ws.Slug)
	if again.ID == ws.ID {
		t.Error("the slug's new workspace reuses the old id")
	}
}

// testWorkspaceDeleteRacesUploads runs uploads (Reserve then Commit) into a
// workspace while it is deleted. Either the delete wins, and no upload
// committed or left anything, or the delete is refused for what the uploads
// hold. No file ever outlives its workspace, and every loser gets a domain
// error, not a database one.
func testWorkspaceDeleteRacesUploads(t *testing.T, b backend) {
	s := b.store(t)
	mustUser(t, s, "alice")
	const rounds, uploads = 8, 4
	outcomes := map[string]int{}
	for round := range rounds {
		ws := mustWorkspace(t, s, "alice", fmt.Sprintf("race-%d", round))
		start := make(chan struct{})
		var wg sync.WaitGroup
		var delErr error
		deleteRuns := func() {
			wg.Go(func() {
				<-start
				delErr = s.DeleteWorkspace(testContext(t), "alice", workspace.Ref{ID: ws.ID})
			})
		}
		// Starting the delete first in half the rounds tips the race its
		// way more often; either way the assertions below must hold.
		if round%2 == 0 {
			deleteRuns()
		}
		upErrs := make([]error, uploads)
		for i := range uploads {
			wg.Go(func() {
				<-start
				ctx := testContext(t)
				res, err := s.Reserve(ctx, ws.ID, 10, 1<<20, time.Minute)
				if err != nil {
					upErrs[i] = err
					return
				}
				upErrs[i] = s.Commit(ctx, res, record(ws.ID, 10))
			})
		}
		if round%2 == 1 {
			deleteRuns()
		}
		close(start)
		wg.Wait()

		committed := 0
		for _, err := range upErrs {
			switch {
			case err == nil:
				committed++
			case errors.Is(err, workspace.ErrNotFound), errors.Is(err, files.ErrReservationNotFound):
			default:
				t.Errorf("round %d: upload failed with %v, want success or a domain error", round, err)
			}
		}
		fileRows := count(t, s, `SELECT COUNT(*) FROM files WHERE workspace_id = $1`, ws.ID)
		orphans := count(t, s, `SELECT COUNT(*) FROM files f WHERE NOT EXISTS (SELECT 1 FROM workspaces w WHERE w.id = f.workspace_id)`)
		if orphans != 0 {
			t.Fatalf("round %d: %d files whose workspace is gone", round, orphans)
		}
		var nd *workspace.NotDeletableError
		switch {
		case delErr == nil:
			outcomes["deleted"]++
			if committed != 0 || fileRows != 0 {
				t.Errorf("round %d: deleted, yet %d uploads committed (%d rows)", round, committed, fileRows)
			}
		case errors.As(delErr, &nd):
			outcomes["refused"]++
			if fileRows != committed || nd.Files+nd.Uploads == 0 {
				t.Errorf("round %d: refused with %+v; %d committed, %d rows", round, nd, committed, fileRows)
			}
		default:
			t.Errorf("round %d: DeleteWorkspace = %v", round, delErr)
		}
	}
	t.Logf("outcomes over %d rounds: %v", rounds, outcomes)
}
