package sqlstore

import (
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/aigateway/gateway/internal/money"
	"github.com/aigateway/gateway/policy/keys"
)

// mustKey stores a key of user with role in ws and returns it as stored.
func mustRoleKey(t *testing.T, s *Store, user string, role keys.Role, ws string, at time.Time) keys.APIKey {
	t.Helper()
	_, k, err := keys.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	k.UserID, k.CreatorUserID, k.Role, k.WorkspaceID, k.Name, k.CreatedAt = user, user, role, ws, "k", at
	if err := s.CreateKey(testContext(t), k); err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	return k
}

func testKeyManagedFields(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	ws := mustWorkspace(t, s, "alice", "team")
	_, k, _ := keys.NewKey()
	exp := time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC)
	limit := money.Micros(12_345_678)
	k.UserID, k.CreatorUserID, k.Role, k.WorkspaceID, k.Name = "alice", "alice", keys.RoleStandard, ws.ID, "ci"
	k.CreatedAt, k.ExpiresAt, k.Limit, k.LimitReset, k.IncludeBYOKInLimit = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), &exp, &limit, keys.ResetWeekly, true
	if err := s.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	got, err := s.UserKey(ctx, "alice", k.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, k) {
		t.Fatalf("UserKey =\n%+v\nwant\n%+v", got, k)
	}
	if _, err := s.UserKey(ctx, "bob", k.ID); !errors.Is(err, keys.ErrKeyNotFound) {
		t.Fatalf("another user's key: %v, want ErrKeyNotFound", err)
	}
}

func testKeyListPages(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	mustUser(t, s, "bob")
	a := mustWorkspace(t, s, "alice", "a")
	c := mustWorkspace(t, s, "alice", "c")
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var want []string
	for i := range 5 {
		ws := a.ID
		if i%2 == 1 {
			ws = c.ID
		}
		k := mustRoleKey(t, s, "alice", keys.RoleStandard, ws, base.Add(time.Duration(i)*time.Minute))
		want = append(want, k.ID)
	}
	mustRoleKey(t, s, "bob", keys.RoleStandard, "", base)
	if err := s.SetKeyDisabled(ctx, want[2], true, base); err != nil {
		t.Fatal(err)
	}
	ids := func(q keys.ListQuery) []string {
		t.Helper()
		page, err := s.ListKeys(ctx, "alice", q)
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, k := range page {
			out = append(out, k.ID)
		}
		return out
	}
	if got := ids(keys.ListQuery{Limit: 100, IncludeDisabled: true}); !reflect.DeepEqual(got, want) {
		t.Errorf("all = %v, want %v", got, want)
	}
	if got, w := ids(keys.ListQuery{Limit: 100}), []string{want[0], want[1], want[3], want[4]}; !reflect.DeepEqual(got, w) {
		t.Errorf("enabled = %v, want %v", got, w)
	}
	if got, w := ids(keys.ListQuery{Limit: 2, Offset: 1, IncludeDisabled: true}), want[1:3]; !reflect.DeepEqual(got, w) {
		t.Errorf("page = %v, want %v", got, w)
	}
	if got, w := ids(keys.ListQuery{Limit: 100, WorkspaceID: c.ID, IncludeDisabled: true}), []string{want[1], want[3]}; !reflect.DeepEqual(got, w) {
		t.Errorf("workspace c = %v, want %v", got, w)
	}
	if got := ids(keys.ListQuery{Limit: 100, WorkspaceID: "not-a-uuid"}); len(got) != 0 {
		t.Errorf("malformed workspace = %v, want none", got)
	}
}

func testKeyUpdateDelete(t *testing.T, b backend) {
	s := b.store(t)
	clock := useClock(s)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	mustUser(t, s, "bob")
	k := mustRoleKey(t, s, "alice", keys.RoleStandard, "", clock.now())
	mgmt := mustRoleKey(t, s, "alice", keys.RoleManagement, "", clock.now())
	svc := mustRoleKey(t, s, "alice", keys.RoleService, "", clock.now())
	since := clock.now()

	limit := money.Micros(5_000_000)
	at := clock.now().Add(time.Second)
	got, err := s.UpdateKey(ctx, "alice", k.ID, keys.UpdateRequest{
		Name:       keys.Optional[string]{Set: true, Value: "renamed"},
		Disabled:   keys.Optional[bool]{Set: true, Value: true},
		Limit:      keys.Optional[*money.Micros]{Set: true, Value: &limit},
		LimitReset: keys.Optional[keys.Reset]{Set: true, Value: keys.ResetDaily},
	}, at)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "renamed" || !got.Disabled || got.Limit == nil || *got.Limit != limit ||
		got.LimitReset != keys.ResetDaily || got.UpdatedAt == nil || !got.UpdatedAt.Equal(at) {
		t.Fatalf("updated = %+v", got)
	}
	// null clears.
	got, err = s.UpdateKey(ctx, "alice", k.ID, keys.UpdateRequest{
		Limit:      keys.Optional[*money.Micros]{Set: true},
		LimitReset: keys.Optional[keys.Reset]{Set: true},
	}, at)
	if err != nil || got.Limit != nil || got.LimitReset != keys.ResetNever || got.Name != "renamed" {
		t.Fatalf("cleared = %+v, %v", got, err)
	}

	for _, other := range []keys.APIKey{mgmt, svc} {
		if _, err := s.UpdateKey(ctx, "alice", other.ID, keys.UpdateRequest{Disabled: keys.Optional[bool]{Set: true, Value: true}}, at); !errors.Is(err, keys.ErrManagedByCLI) {
			t.Errorf("update %s key: %v, want ErrManagedByCLI", other.Role, err)
		}
		if err := s.DeleteKey(ctx, "alice", other.ID, at); !errors.Is(err, keys.ErrManagedByCLI) {
			t.Errorf("delete %s key: %v, want ErrManagedByCLI", other.Role, err)
		}
	}
	if _, err := s.UpdateKey(ctx, "bob", k.ID, keys.UpdateRequest{Name: keys.Optional[string]{Set: true, Value: "x"}}, at); !errors.Is(err, keys.ErrKeyNotFound) {
		t.Errorf("bob updates alice's key: %v", err)
	}
	if err := s.DeleteKey(ctx, "bob", k.ID, at); !errors.Is(err, keys.ErrKeyNotFound) {
		t.Errorf("bob deletes alice's key: %v", err)
	}
	if err := s.DeleteKey(ctx, "alice", k.ID, at); err != nil {
		t.Fatal(err)
	}
	if _, err := s.KeyByID(ctx, k.ID); !errors.Is(err, keys.ErrKeyNotFound) {
		t.Fatalf("deleted key: %v", err)
	}
	if err := s.DeleteKey(ctx, "alice", k.ID, at); !errors.Is(err, keys.ErrKeyNotFound) {
		t.Fatalf("deleted twice: %v", err)
	}

	// Two updates and a delete of k are in the change log; the refused
	// changes are not.
	changes, err := s.KeyChangesSince(ctx, since)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 3 {
		t.Fatalf("change log = %+v, want 3 entries of %s", changes, k.ID)
	}
	for i, c := range changes {
		if c.KeyID != k.ID || (i > 0 && c.Seq <= changes[i-1].Seq) {
			t.Fatalf("change log = %+v", changes)
		}
	}
	clock.advance(KeyChangeRetention + time.Second)
	if later, err := s.KeyChangesSince(ctx, clock.now()); err != nil || len(later) != 0 {
		t.Fatalf("changes after now = %+v, %v", later, err)
	}
	if n, err := s.SweepKeyChanges(ctx, 100); err != nil || n != 3 {
		t.Fatalf("SweepKeyChanges = %d, %v; want 3", n, err)
	}
}

func testKeyCreateIdempotent(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	idem := func(k keys.APIKey) *keys.Idempotency {
		return &keys.Idempotency{UserID: "alice", Key: "retry-1", RequestHash: "h1", KeyID: k.ID, Sealed: []byte("sealed " + k.ID)}
	}
	const racers = 8
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		made   []string
		priors []*keys.Idempotency
	)
	for range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, k, _ := keys.NewKey()
			k.UserID, k.Role, k.Name, k.CreatedAt = "alice", keys.RoleStandard, "r", time.Now()
			prior, err := s.CreateKeyOnce(ctx, k, idem(k))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if prior == nil {
				made = append(made, k.ID)
			} else {
				priors = append(priors, prior)
			}
		}()
	}
	wg.Wait()
	if len(made) != 1 || len(priors) != racers-1 {
		t.Fatalf("%d created, %d replayed; want 1 and %d", len(made), len(priors), racers-1)
	}
	for _, p := range priors {
		if p.KeyID != made[0] || string(p.Sealed) != "sealed "+made[0] || p.RequestHash != "h1" {
			t.Fatalf("prior = %+v, want the record of %s", p, made[0])
		}
	}
	if n := count(t, s, `SELECT COUNT(*) FROM api_keys WHERE user_id = $1`, "alice"); n != 1 {
		t.Fatalf("%d keys stored, want 1", n)
	}
}

// testProviderKeysMigrate: a provider key stored by `gateway byok set`
// before provider keys were managed over HTTP is carried over, usable and
// listed as the CLI's.
func testProviderKeysMigrate(t *testing.T, b backend) {
	dsn := b.fresh(t)
	s := b.open(t, dsn)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	ws := mustWorkspace(t, s, "alice", "before-upgrade")
	old := `CREATE TABLE provider_keys (workspace_id UUID NOT NULL REFERENCES workspaces (id), provider TEXT NOT NULL,
		sealed BYTEA NOT NULL, updated_at TIMESTAMPTZ NOT NULL, PRIMARY KEY (workspace_id, provider))`
	if s.d.name == DriverSQLite {
		old = `CREATE TABLE provider_keys (workspace_id TEXT NOT NULL REFERENCES workspaces (id), provider TEXT NOT NULL,
			sealed BLOB NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (workspace_id, provider)) STRICT`
	}
	for _, q := range []string{`DROP TABLE byok_keys`, old, `DELETE FROM schema_migrations WHERE version = 8`} {
		if _, err := s.w.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := s.w.ExecContext(ctx, `INSERT INTO provider_keys (workspace_id, provider, sealed, updated_at)
		VALUES ($1, 'anthropic', $2, $3)`, ws.ID, []byte("sealed-before"), s.d.ts(micro(time.Now()))); err != nil {
		t.Fatal(err)
	}
	s2 := b.open(t, dsn)
	got, err := s2.ProviderKey(ctx, ws.ID, "anthropic", "0000000000000001")
	if err != nil || string(got) != "sealed-before" {
		t.Fatalf("after the upgrade: %q, %v", got, err)
	}
	page, _, err := s2.ListProviderKeys(ctx, "alice", keys.ProviderKeyQuery{Limit: 10})
	if err != nil || len(page) != 1 || !page[0].FromCLI || page[0].WorkspaceID != ws.ID {
		t.Fatalf("listed: %+v, %v", page, err)
	}
	if _, err := s2.UserProviderKey(ctx, "alice", page[0].ID); err != nil {
		t.Fatalf("the migrated key's id %q does not name it: %v", page[0].ID, err)
	}
	if err := s2.PutProviderKey(ctx, ws.ID, "anthropic", []byte("sealed-after"), "x"); err != nil {
		t.Fatal(err)
	}
	if _, total, _ := s2.ListProviderKeys(ctx, "alice", keys.ProviderKeyQuery{Limit: 10}); total != 1 {
		t.Errorf("byok set after the upgrade added a key (%d) instead of replacing its own", total)
	}
}
