package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/aigateway/gateway/internal/invalid"
)

// memStore is a hand-written in-memory Store with the contract's rules:
// per-user slugs, scoped idempotency records, the default's slug fixed, and
// deletes refused while something is held.
type memStore struct {
	mu   sync.Mutex
	ws   []Workspace
	idem map[string]*Idempotency
	// held says what each workspace id still holds, for DeleteWorkspace.
	held map[string]NotDeletableError
	// calls counts store calls by method.
	calls map[string]int
}

func (m *memStore) count(method string) {
	if m.calls == nil {
		m.calls = map[string]int{}
	}
	m.calls[method]++
}

func idemKey(i *Idempotency) string { return i.UserID + "\x00" + i.Scope + "\x00" + i.Key }

func (m *memStore) claim(idem *Idempotency) *Idempotency {
	if idem == nil {
		return nil
	}
	if prior, ok := m.idem[idemKey(idem)]; ok {
		return prior
	}
	return nil
}

func (m *memStore) record(idem *Idempotency, w Workspace) {
	if idem == nil {
		return
	}
	if m.idem == nil {
		m.idem = map[string]*Idempotency{}
	}
	r := *idem
	r.Workspace = w
	m.idem[idemKey(idem)] = &r
}

func (m *memStore) CreateWorkspace(_ context.Context, w Workspace, idem *Idempotency) (*Idempotency, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.count("CreateWorkspace")
	if prior := m.claim(idem); prior != nil {
		return prior, nil
	}
	for _, x := range m.ws {
		if x.CreatedBy == w.CreatedBy && x.Slug == w.Slug {
			return nil, ErrSlugTaken
		}
	}
	m.ws = append(m.ws, w)
	m.record(idem, w)
	return nil, nil
}

// indexOf finds user's workspace ref as the SQL store does: id, then slug.
func (m *memStore) indexOf(user string, ref Ref) int {
	for _, by := range []func(Workspace) bool{
		func(w Workspace) bool { return ref.ID != "" && w.ID == ref.ID },
		func(w Workspace) bool { return ref.Slug != "" && w.Slug == ref.Slug },
	} {
		for i, w := range m.ws {
			if w.CreatedBy == user && by(w) {
				return i
			}
		}
	}
	return -1
}

func (m *memStore) WorkspaceByID(_ context.Context, user, id string) (Workspace, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i := m.indexOf(user, Ref{ID: id}); i >= 0 {
		return m.ws[i], nil
	}
	return Workspace{}, ErrNotFound
}

func (m *memStore) WorkspaceBySlug(_ context.Context, user, slug string) (Workspace, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i := m.indexOf(user, Ref{Slug: slug}); i >= 0 {
		return m.ws[i], nil
	}
	return Workspace{}, ErrNotFound
}

func (m *memStore) ListWorkspaces(_ context.Context, user string, offset, limit int) ([]Workspace, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var mine []Workspace
	for _, w := range m.ws {
		if w.CreatedBy == user {
			mine = append(mine, w)
		}
	}
	sort.Slice(mine, func(i, j int) bool {
		if !mine[i].CreatedAt.Equal(mine[j].CreatedAt) {
			return mine[i].CreatedAt.Before(mine[j].CreatedAt)
		}
		return mine[i].ID < mine[j].ID
	})
	total := len(mine)
	if offset >= total {
		return nil, total, nil
	}
	return mine[offset:min(offset+limit, total)], total, nil
}

func (m *memStore) UpdateWorkspace(_ context.Context, user string, ref Ref, u UpdateRequest, at time.Time, idem *Idempotency) (Workspace, *Idempotency, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.count("UpdateWorkspace")
	if prior := m.claim(idem); prior != nil {
		return Workspace{}, prior, nil
	}
	i := m.indexOf(user, ref)
	if i < 0 {
		return Workspace{}, nil, ErrNotFound
	}
	w := m.ws[i]
	if u.Slug.Set && u.Slug.Value != w.Slug {
		if w.Slug == DefaultSlug {
			return Workspace{}, nil, ErrDefaultSlug
		}
		for _, x := range m.ws {
			if x.CreatedBy == user && x.Slug == u.Slug.Value {
				return Workspace{}, nil, ErrSlugTaken
			}
		}
	}
	if !u.Empty() {
		w = applyUpdate(w, u)
		w.UpdatedAt = &at
		m.ws[i] = w
	}
	m.record(idem, w)
	return w, nil, nil
}

// applyUpdate is the fake's reading of UpdateRequest's documented meaning.
func applyUpdate(w Workspace, u UpdateRequest) Workspace {
	if u.Name.Set {
		w.Name = u.Name.Value
	}
	if u.Slug.Set {
		w.Slug = u.Slug.Value
	}
	if u.Description.Set {
		w.Description = ""
		if u.Description.Value != nil {
			w.Description = *u.Description.Value
		}
	}
	if u.DefaultTextModel.Set {
		w.DefaultTextModel = u.DefaultTextModel.Value
	}
	if u.DefaultImageModel.Set {
		w.DefaultImageModel = u.DefaultImageModel.Value
	}
	if u.DefaultProviderSort.Set {
		w.DefaultProviderSort = u.DefaultProviderSort.Value
	}
	if u.IOLoggingAPIKeyIDs.Set {
		w.IOLoggingAPIKeyIDs = u.IOLoggingAPIKeyIDs.Value
	}
	if u.IOLoggingSamplingRate.Set {
		w.IOLoggingSamplingRate = u.IOLoggingSamplingRate.Value
	}
	if u.IsDataDiscountLoggingEnabled.Set {
		w.IsDataDiscountLoggingEnabled = u.IsDataDiscountLoggingEnabled.Value
	}
	if u.IsObservabilityBroadcastEnabled.Set {
		w.IsObservabilityBroadcastEnabled = u.IsObservabilityBroadcastEnabled.Value
	}
	if u.IsObservabilityIOLoggingEnabled.Set {
		w.IsObservabilityIOLoggingEnabled = u.IsObservabilityIOLoggingEnabled.Value
	}
	return w
}

func (m *memStore) DeleteWorkspace(_ context.Context, user string, ref Ref) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.count("DeleteWorkspace")
	i := m.indexOf(user, ref)
	if i < 0 {
		return ErrNotFound
	}
	if m.ws[i].Slug == DefaultSlug {
		return &NotDeletableError{Default: true}
	}
	if h, ok := m.held[m.ws[i].ID]; ok {
		return &h
	}
	m.ws = append(m.ws[:i], m.ws[i+1:]...)
	return nil
}

// knownModels is a catalog that counts its lookups.
type knownModels struct {
	ids     map[string]bool
	mu      sync.Mutex
	lookups int
}

func (k *knownModels) ModelExists(id string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.lookups++
	return k.ids[id]
}

func newTestService(models ...string) (*Service, *memStore, *knownModels) {
	st := &memStore{}
	k := &knownModels{ids: map[string]bool{}}
	for _, m := range models {
		k.ids[m] = true
	}
	svc := NewService(st, k)
	var mu sync.Mutex
	clock := time.Date(2026, 8, 18, 12, 0, 0, 0, time.UTC)
	svc.now = func() time.Time { // a second per call, so creation order is time order
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(time.Second)
		return clock
	}
	return svc, st, k
}

// creation is a creation of name and slug.
func creation(name, slug string) CreateRequest { return CreateRequest{Name: &name, Slug: &slug} }

func mustCreate(t *testing.T, svc *Service, user string, req CreateRequest) Workspace {
	t.Helper()
	res, err := svc.Create(context.Background(), user, req, "")
	if err != nil {
		t.Fatalf("Create(%+v): %v", req, err)
	}
	return res.Workspace
}

// invalidFields returns the fields err names, sorted, or fails when err is
// not an *invalid.Problems.
func invalidFields(t *testing.T, err error) []string {
	t.Helper()
	var p *invalid.Problems
	if !errors.As(err, &p) {
		t.Fatalf("err = %v, want *invalid.Problems", err)
	}
	var names []string
	for _, f := range p.FieldProblems() {
		names = append(names, f.Name)
	}
	sort.Strings(names)
	return names
}

func TestServiceCreate(t *testing.T) {
	svc, st, models := newTestService("x/y")
	ctx := context.Background()
	req := creation("A", "a")
	req.DefaultTextModel = ptr("x/y")
	first, err := svc.Create(ctx, "u1", req, "key-1")
	if err != nil || first.Replayed {
		t.Fatalf("create = %+v, %v", first, err)
	}
	if models.lookups != 1 {
		t.Errorf("the catalog was asked %d times for one default model, want once", models.lookups)
	}
	w := first.Workspace
	if w.Name != "A" || w.Slug != "a" || w.CreatedBy != "u1" || w.IOLoggingSamplingRate != 1 ||
		!w.IsDataDiscountLoggingEnabled || w.UpdatedAt != nil || w.ID == w.DefaultGuardrailID {
		t.Errorf("created %+v: defaults not applied", w)
	}

	// The same key and request (other pointers to equal values): replayed.
	again, err := svc.Create(ctx, "u1", CreateRequest{DefaultTextModel: ptr("x/y"), Slug: ptr("a"), Name: ptr("A")}, "key-1")
	if err != nil || !again.Replayed || !reflect.DeepEqual(again.Workspace, w) {
		t.Fatalf("retry = %+v, %v; want the first workspace replayed", again, err)
	}
	if _, err := svc.Create(ctx, "u1", creation("B", "b"), "key-1"); !errors.Is(err, ErrIdempotencyMismatch) {
		t.Fatalf("same key, other body: %v, want ErrIdempotencyMismatch", err)
	}
	if _, err := svc.Create(ctx, "u1", creation("A", "a"), ""); !errors.Is(err, ErrSlugTaken) {
		t.Fatalf("taken slug: %v, want ErrSlugTaken", err)
	}
	bad := creation("", "c")
	bad.DefaultImageModel = ptr("no/such")
	calls := st.calls["CreateWorkspace"]
	_, err = svc.Create(ctx, "u1", bad, "")
	if got := invalidFields(t, err); !reflect.DeepEqual(got, []string{"default_image_model", "name"}) {
		t.Errorf("named %v, want name and default_image_model together", got)
	}
	if st.calls["CreateWorkspace"] != calls {
		t.Error("an invalid request reached the store")
	}
}

func TestServiceUpdate(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		u     UpdateRequest
		check func(t *testing.T, before, after Workspace)
		// fields, when set, are the fields the *invalid.Problems must name.
		fields []string
	}{
		{name: "empty request is a no-op", check: func(t *testing.T, before, after Workspace) {
			if !reflect.DeepEqual(before, after) {
				t.Errorf("{} changed %+v into %+v", before, after)
			}
		}},
		{name: "one field", u: UpdateRequest{Name: set("Renamed")}, check: func(t *testing.T, before, after Workspace) {
			if after.Name != "Renamed" || after.Slug != before.Slug || after.UpdatedAt == nil {
				t.Errorf("after = %+v", after)
			}
		}},
		{name: "nulls clear", u: UpdateRequest{Description: set[*string](nil), DefaultTextModel: set[*string](nil),
			DefaultProviderSort: set[*string](nil), IOLoggingAPIKeyIDs: set[[]string](nil)},
			check: func(t *testing.T, _, after Workspace) {
				if after.Description != "" || after.DefaultTextModel != nil || after.DefaultProviderSort != nil || after.IOLoggingAPIKeyIDs != nil {
					t.Errorf("after = %+v, want the nullable fields cleared", after)
				}
			}},
		{name: "every field", u: UpdateRequest{Name: set("N"), Slug: set("n-2"), Description: set(ptr("d")),
			DefaultTextModel: set(ptr("x/y")), DefaultImageModel: set(ptr("x/z")), DefaultProviderSort: set(ptr("latency")),
			IOLoggingAPIKeyIDs: set([]string{}), IOLoggingSamplingRate: set(0.25), IsDataDiscountLoggingEnabled: set(false),
			IsObservabilityBroadcastEnabled: set(true), IsObservabilityIOLoggingEnabled: set(true)},
			check: func(t *testing.T, _, after Workspace) {
				if after.Slug != "n-2" || *after.DefaultImageModel != "x/z" || after.IOLoggingAPIKeyIDs == nil ||
					len(after.IOLoggingAPIKeyIDs) != 0 || after.IOLoggingSamplingRate != 0.25 || after.IsDataDiscountLoggingEnabled ||
					!after.IsObservabilityBroadcastEnabled || !after.IsObservabilityIOLoggingEnabled {
					t.Errorf("after = %+v", after)
				}
			}},
		{name: "creation limits apply", u: UpdateRequest{Name: set(""), Slug: set("Bad"), IOLoggingSamplingRate: set(2.0),
			DefaultProviderSort: set(ptr("fast"))},
			fields: []string{"default_provider_sort", "io_logging_sampling_rate", "name", "slug"}},
		{name: "unknown model beside a bad field", u: UpdateRequest{DefaultTextModel: set(ptr("no/such")), Name: set(" ")},
			fields: []string{"default_text_model", "name"}},
		{name: "the default's slug", u: UpdateRequest{Slug: set("elsewhere")}, fields: []string{"slug"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, _, _ := newTestService("x/y", "x/z")
			target := DefaultSlug // only the default-slug case needs the default
			if tt.name != "the default's slug" {
				target = "ws"
			}
			req := creation("W", target)
			req.Description, req.DefaultTextModel, req.DefaultProviderSort = ptr("text"), ptr("x/y"), ptr("price")
			req.IOLoggingAPIKeyIDs = []string{"k"}
			before := mustCreate(t, svc, "u1", req)
			res, err := svc.Update(ctx, "u1", before.ID, tt.u, "")
			if tt.fields != nil {
				if got := invalidFields(t, err); !reflect.DeepEqual(got, tt.fields) {
					t.Errorf("named %v, want %v", got, tt.fields)
				}
				return
			}
			if err != nil || res.Replayed {
				t.Fatalf("Update = %+v, %v", res, err)
			}
			tt.check(t, before, res.Workspace)
			stored, err := svc.Get(ctx, "u1", before.ID)
			if err != nil || !reflect.DeepEqual(stored, res.Workspace) {
				t.Errorf("stored %+v, %v; want what was answered, %+v", stored, err, res.Workspace)
			}
		})
	}
}

func TestServiceUpdateIdempotency(t *testing.T) {
	svc, st, _ := newTestService()
	ctx := context.Background()
	w := mustCreate(t, svc, "u1", creation("W", "old"))

	first, err := svc.Update(ctx, "u1", "old", UpdateRequest{Slug: set("new")}, "k")
	if err != nil || first.Workspace.Slug != "new" {
		t.Fatalf("Update = %+v, %v", first, err)
	}
	// The retry addresses the slug the first request changed: it is
	// replayed all the same.
	again, err := svc.Update(ctx, "u1", "old", UpdateRequest{Slug: set("new")}, "k")
	if err != nil || !again.Replayed || !reflect.DeepEqual(again.Workspace, first.Workspace) {
		t.Fatalf("retry = %+v, %v; want the first answer replayed", again, err)
	}
	if _, err := svc.Update(ctx, "u1", "new", UpdateRequest{Slug: set("new")}, "k"); !errors.Is(err, ErrIdempotencyMismatch) {
		t.Errorf("same key and body, other workspace reference: %v, want ErrIdempotencyMismatch", err)
	}
	if _, err := svc.Update(ctx, "u1", "old", UpdateRequest{Slug: set("other")}, "k"); !errors.Is(err, ErrIdempotencyMismatch) {
		t.Errorf("same key, other body: %v, want ErrIdempotencyMismatch", err)
	}
	// Scopes keep a creation's key apart from an update's.
	created, err := svc.Create(ctx, "u1", creation("X", "x"), "k")
	if err != nil || created.Replayed {
		t.Errorf("Create with an update's key = %+v, %v; want a new workspace", created, err)
	}
	if st.calls["UpdateWorkspace"] != 4 {
		t.Errorf("%d store updates, want 4 (every request reaches the store's claim)", st.calls["UpdateWorkspace"])
	}
	if got, _ := svc.Get(ctx, "u1", w.ID); got.Slug != "new" {
		t.Errorf("slug = %q, want new", got.Slug)
	}
}

func TestServiceUpdateErrors(t *testing.T) {
	svc, st, _ := newTestService()
	ctx := context.Background()
	mustCreate(t, svc, "u1", creation("A", "a"))
	mustCreate(t, svc, "u1", creation("B", "b"))
	other := mustCreate(t, svc, "u2", creation("C", "c"))

	if _, err := svc.Update(ctx, "u1", "a", UpdateRequest{Slug: set("b")}, ""); !errors.Is(err, ErrSlugTaken) {
		t.Errorf("taken slug: %v, want ErrSlugTaken", err)
	}
	if _, err := svc.Update(ctx, "u1", other.ID, UpdateRequest{}, ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("another user's workspace: %v, want ErrNotFound", err)
	}
	calls := st.calls["UpdateWorkspace"]
	if _, err := svc.Update(ctx, "u1", "Not A Slug", UpdateRequest{}, ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("malformed reference: %v, want ErrNotFound", err)
	}
	if st.calls["UpdateWorkspace"] != calls {
		t.Error("a reference that names nothing reached the store")
	}
	// Renaming into "default" is allowed: that workspace becomes the default.
	res, err := svc.Update(ctx, "u1", "a", UpdateRequest{Slug: set("default")}, "")
	if err != nil || res.Workspace.Slug != DefaultSlug {
		t.Fatalf("rename to default = %+v, %v", res, err)
	}
	if d, err := svc.Default(ctx, "u1"); err != nil || d.ID != res.Workspace.ID {
		t.Errorf("Default = %+v, %v; want the renamed workspace", d, err)
	}
}

func TestServiceListAndDelete(t *testing.T) {
	svc, st, _ := newTestService()
	ctx := context.Background()
	def, err := svc.Default(ctx, "u1")
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{def.ID}
	for _, slug := range []string{"one", "two", "three"} {
		ids = append(ids, mustCreate(t, svc, "u1", creation("W", slug)).ID)
	}
	ids = ids[1:] // the workspaces made here, after the default
	mustCreate(t, svc, "u2", creation("W", "one"))

	page, err := svc.List(ctx, "u1", Page{Offset: 2, Limit: 1})
	if err != nil || page.Total != 4 || len(page.Workspaces) != 1 || page.Workspaces[0].ID != ids[1] {
		t.Fatalf("List(2, 1) = %+v, %v", page, err)
	}
	past, err := svc.List(ctx, "u1", Page{Offset: 10, Limit: 5})
	if err != nil || past.Total != 4 || past.Workspaces == nil || len(past.Workspaces) != 0 {
		t.Fatalf("List past the end = %+v, %v; want an empty, non-nil page", past, err)
	}
	if b, _ := json.Marshal(past.Workspaces); string(b) != "[]" {
		t.Errorf("an empty page encodes as %s, want []", b)
	}

	st.held = map[string]NotDeletableError{ids[0]: {Files: 2, Keys: 1, Uploads: 3}}
	err = svc.Delete(ctx, "u1", "one")
	var nd *NotDeletableError
	if !errors.As(err, &nd) || !errors.Is(err, ErrNotDeletable) || nd.Default || nd.Files != 2 || nd.Keys != 1 || nd.Uploads != 3 {
		t.Fatalf("Delete of a workspace with files = %v (%+v)", err, nd)
	}
	if err := svc.Delete(ctx, "u1", ids[1]); err != nil {
		t.Fatalf("Delete by id: %v", err)
	}
	if _, err := svc.Get(ctx, "u1", ids[1]); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Delete: %v, want ErrNotFound", err)
	}
	if err := svc.Delete(ctx, "u1", ids[1]); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Delete: %v, want ErrNotFound", err)
	}
	calls := st.calls["DeleteWorkspace"]
	if err := svc.Delete(ctx, "u1", "../x"); !errors.Is(err, ErrNotFound) || st.calls["DeleteWorkspace"] != calls {
		t.Errorf("Delete of a malformed reference: %v (store reached: %v)", err, st.calls["DeleteWorkspace"] != calls)
	}
	if _, err := svc.Default(ctx, "u1"); err != nil {
		t.Fatal(err)
	}
	err = svc.Delete(ctx, "u1", DefaultSlug)
	if !errors.As(err, &nd) || !nd.Default {
		t.Errorf("Delete of the default: %v, want *NotDeletableError{Default: true}", err)
	}
}

// TestServiceListShowsTheDefault: a user whose default workspace was never
// made (keys from before it was made with the first key) finds it in the
// list all the same, and by its slug, as one workspace however many ask at
// once; another user's list is untouched.
func TestServiceListShowsTheDefault(t *testing.T) {
	svc, st, _ := newTestService()
	ctx := context.Background()
	team, err := svc.build("u1", creation("Team", "team"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateWorkspace(ctx, team, nil); err != nil {
		t.Fatal(err)
	}
	lists := make([]Listing, 8)
	var wg sync.WaitGroup
	for i := range lists {
		wg.Go(func() {
			var err error
			if lists[i], err = svc.List(ctx, "u1", Page{Limit: 50}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	def, err := svc.Get(ctx, "u1", DefaultSlug)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lists {
		if l.Total != 2 || len(l.Workspaces) != 2 || l.Workspaces[0].ID != team.ID || l.Workspaces[1].ID != def.ID {
			t.Fatalf("List = %+v, want team then the default %s", l, def.ID)
		}
	}
	if def.Slug != DefaultSlug || def.Name != "Default" || def.CreatedBy != "u1" {
		t.Errorf("default = %+v", def)
	}
	if got, _, _ := st.ListWorkspaces(ctx, "u2", 0, 50); len(got) != 0 {
		t.Errorf("u2's workspaces: %+v, want none (nobody of u2 asked)", got)
	}
}

func TestServiceGetAndDefault(t *testing.T) {
	svc, _, _ := newTestService()
	ctx := context.Background()
	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Go(func() {
			w, err := svc.Default(ctx, "u1")
			if err != nil {
				t.Error(err)
			}
			ids[i] = w.ID
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("concurrent Default calls disagree: %v", ids)
		}
	}
	byID, err := svc.Get(ctx, "u1", ids[0])
	if err != nil || byID.Slug != DefaultSlug {
		t.Fatalf("Get by id = %+v, %v", byID, err)
	}
	if _, err := svc.Get(ctx, "u2", ids[0]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another user's workspace: %v, want ErrNotFound", err)
	}
	if _, err := svc.Get(ctx, "u1", "Not A Slug"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("malformed id: %v, want ErrNotFound", err)
	}
	// A slug shaped like a UUID is found by slug when no id matches.
	uuidSlug := "0190a0b1-2c3d-7e4f-8a9b-0c1d2e3f4a5b"
	w := mustCreate(t, svc, "u1", creation("U", uuidSlug))
	if got, err := svc.Get(ctx, "u1", uuidSlug); err != nil || got.ID != w.ID {
		t.Errorf("Get(uuid-shaped slug) = %+v, %v", got, err)
	}

	// The id of another of the user's workspaces is taken as a slug: a
	// path would read it as that id and name the other workspace.
	if _, err := svc.Create(ctx, "u1", creation("V", ids[0]), ""); !errors.Is(err, ErrSlugTaken) {
		t.Errorf("Create with another workspace's id as slug: %v, want ErrSlugTaken", err)
	}
	if _, err := svc.Update(ctx, "u1", w.ID, UpdateRequest{Slug: set(ids[0])}, ""); !errors.Is(err, ErrSlugTaken) {
		t.Errorf("Update to another workspace's id as slug: %v, want ErrSlugTaken", err)
	}
	// Its own id, or another user's, names nothing else of the user's.
	if _, err := svc.Update(ctx, "u1", w.ID, UpdateRequest{Slug: set(w.ID)}, ""); err != nil {
		t.Errorf("Update to its own id as slug: %v", err)
	}
	if _, err := svc.Create(ctx, "u2", creation("W", ids[0]), ""); err != nil {
		t.Errorf("Create with another user's workspace id as slug: %v", err)
	}
}
