package sqlstore

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy/keys"
	"github.com/google/uuid"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/workspace"
)

// runContract is the behaviour every database must show. Each subtest gets
// a fresh database from b, so subtests run in parallel.
func runContract(t *testing.T, b backend) {
	tests := []struct {
		name string
		run  func(t *testing.T, b backend)
	}{
		{"Migrations/OpenTwiceIsNoOp", testOpenTwice},
		{"Migrations/ConcurrentOpen", testConcurrentOpen},
		{"Ping", testPing},
		{"Keys/RoundTrip", testKeyRoundTrip},
		{"Keys/Errors", testKeyErrors},
		{"Keys/EnsureUserConcurrent", testEnsureUserConcurrent},
		{"Keys/ManagedFields", testKeyManagedFields},
		{"Keys/ListPages", testKeyListPages},
		{"Keys/UpdateDelete", testKeyUpdateDelete},
		{"Keys/CreateIdempotent", testKeyCreateIdempotent},
		{"Workspaces/RoundTrip", testWorkspaceRoundTrip},
		{"Workspaces/Timestamps", testWorkspaceTimestamps},
		{"Workspaces/Visibility", testWorkspaceVisibility},
		{"Workspaces/Errors", testWorkspaceErrors},
		{"Workspaces/SlugRace", testSlugRace},
		{"Workspaces/List", testWorkspaceList},
		{"Workspaces/Update", testWorkspaceUpdate},
		{"Workspaces/UpdateDefault", testWorkspaceUpdateDefault},
		{"Workspaces/UpdateConcurrent", testWorkspaceUpdateConcurrent},
		{"Workspaces/UpdateSlugRace", testWorkspaceUpdateSlugRace},
		{"Workspaces/Delete", testWorkspaceDelete},
		{"Workspaces/DeleteRefusals", testWorkspaceDeleteRefusals},
		{"Workspaces/DeleteRacesUploads", testWorkspaceDeleteRacesUploads},
		{"Idempotency/Replay", testIdempotencyReplay},
		{"Idempotency/Expired", testIdempotencyExpired},
		{"Idempotency/FailedCreateKeepsNoRecord", testIdempotencyFailedCreate},
		{"Idempotency/Race", testIdempotencyRace},
		{"Idempotency/Update", testIdempotencyUpdate},
		{"Idempotency/LegacyRecords", testIdempotencyLegacyRecords},
		{"Quota/ReserveCommit", testReserveCommit},
		{"Quota/Exceeded", testQuotaExceeded},
		{"Quota/Release", testRelease},
		{"Quota/Expiry", testReservationExpiry},
		{"Quota/Renew", testReservationRenew},
		{"Quota/ReserveUpTo", testReserveUpTo},
		{"Sweep/Reservations", testSweepReservations},
		{"Sweep/Idempotency", testSweepIdempotency},
		{"Sweep/Objects", testSweepObjects},
		{"Quota/CommitErrors", testCommitErrors},
		{"Quota/Race", testQuotaRace},
		{"ProviderKeys", testProviderKeys},
		{"ProviderKeys/Choice", testProviderKeyChoice},
		{"ProviderKeys/Migrate", testProviderKeysMigrate},
		{"Usage/Record", testUsageRecord},
		{"Usage/StoredAsSent", testUsageStoredAsSent},
		{"Usage/Overflow", testUsageOverflow},
		{"Console/SignOut", testSignOut},
		{"Usage/Budgets", testBudgets},
		{"Usage/KeyStanding", testKeyStanding},
		{"Usage/Daily", testUsageDaily},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, b)
		})
	}
}

// fakeClock is a settable clock for expiry tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// useClock makes s read time from a fake clock starting at a fixed instant.
// It must be called before s is shared between goroutines.
func useClock(s *Store) *fakeClock {
	c := &fakeClock{t: time.Date(2026, 8, 18, 12, 0, 0, 0, time.UTC)}
	s.now = c.now
	return c
}

func mustUser(t *testing.T, s *Store, id string) {
	t.Helper()
	if err := s.EnsureUser(testContext(t), id); err != nil {
		t.Fatalf("EnsureUser(%q): %v", id, err)
	}
}

// newWorkspace is a workspace with the creation defaults of DESIGN.md §2.
func newWorkspace(user, slug string) workspace.Workspace {
	return workspace.Workspace{
		ID:                           uuid.NewString(),
		Name:                         "Workspace " + slug,
		Slug:                         slug,
		DefaultGuardrailID:           uuid.NewString(),
		CreatedBy:                    user,
		CreatedAt:                    time.Now().Truncate(time.Microsecond).UTC(),
		IOLoggingSamplingRate:        1,
		IsDataDiscountLoggingEnabled: true,
	}
}

func mustWorkspace(t *testing.T, s *Store, user, slug string) workspace.Workspace {
	t.Helper()
	w := newWorkspace(user, slug)
	if _, err := s.CreateWorkspace(testContext(t), w, nil); err != nil {
		t.Fatalf("CreateWorkspace(%q): %v", slug, err)
	}
	return w
}

func count(t *testing.T, s *Store, query string, args ...any) int {
	t.Helper()
	var n int
	rawQuery(t, s.r, &n, query, args...)
	return n
}

func ptr[T any](v T) *T { return &v }

func testOpenTwice(t *testing.T, b backend) {
	dsn := b.fresh(t)
	s1 := b.open(t, dsn)
	mustUser(t, s1, "u1")
	ms, err := loadMigrations(b.driver)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 {
		t.Fatal("no migrations embedded")
	}
	s2 := b.open(t, dsn)
	if n := count(t, s2, `SELECT COUNT(*) FROM schema_migrations`); n != len(ms) {
		t.Errorf("schema_migrations has %d rows after opening twice, want %d", n, len(ms))
	}
	if n := count(t, s2, `SELECT COUNT(*) FROM users WHERE id = $1`, "u1"); n != 1 {
		t.Errorf("user written before the second Open: %d rows, want 1", n)
	}
}

// testConcurrentOpen is several replicas starting at once on an empty
// database: every Open succeeds and each migration is applied once.
func testConcurrentOpen(t *testing.T, b backend) {
	dsn := b.fresh(t)
	const replicas = 4
	stores := make([]*Store, replicas)
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() { stores[i], errs[i] = Open(testContext(t), b.driver, dsn, nil) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: Open: %v", i, err)
			continue
		}
		t.Cleanup(func() { _ = stores[i].Close() })
	}
	if t.Failed() {
		return
	}
	ms, _ := loadMigrations(b.driver)
	if n := count(t, stores[0], `SELECT COUNT(*) FROM schema_migrations`); n != len(ms) {
		t.Errorf("schema_migrations has %d rows, want %d", n, len(ms))
	}
}

func testPing(t *testing.T, b backend) {
	s := b.store(t)
	if err := s.Ping(testContext(t)); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

func testKeyRoundTrip(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	ws := mustWorkspace(t, s, "alice", "team")
	created := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.FixedZone("X", 3600))

	tests := []struct {
		name string
		key  keys.APIKey
	}{
		{"management, all models, no workspace", keys.APIKey{
			Role: keys.RoleManagement, Name: "admin", CreatedAt: created}},
		{"standard, empty allowlist, disabled", keys.APIKey{
			Role: keys.RoleStandard, Name: "none", Models: []string{}, Disabled: true,
			WorkspaceID: ws.ID, CreatedAt: created}},
		{"standard, allowlist", keys.APIKey{
			Role: keys.RoleStandard, Name: "ci", Models: []string{"openai/gpt-5", "x/y:free"},
			WorkspaceID: ws.ID, CreatedAt: created}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			token, k, err := keys.NewKey()
			if err != nil {
				t.Fatal(err)
			}
			id, hash := k.ID, k.Hash
			k = tt.key
			k.ID, k.Hash, k.UserID = id, hash, "alice"
			if err := s.CreateKey(ctx, k); err != nil {
				t.Fatalf("CreateKey: %v", err)
			}
			got, err := s.KeyByID(ctx, k.ID)
			if err != nil {
				t.Fatalf("KeyByID: %v", err)
			}
			want := k
			want.CreatedAt = created.UTC()
			if !reflect.DeepEqual(got, want) {
				t.Errorf("KeyByID =\n%+v\nwant\n%+v", got, want)
			}
			if got.CreatedAt.Location() != time.UTC {
				t.Errorf("CreatedAt location %v, want UTC", got.CreatedAt.Location())
			}
			if (got.Models == nil) != (k.Models == nil) {
				t.Errorf("Models nil-ness changed: got %#v, stored %#v", got.Models, k.Models)
			}
			if !got.Matches(token) {
				t.Error("stored key does not match its token")
			}
		})
	}
}

func testKeyErrors(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	mustUser(t, s, "bob")
	bobs := mustWorkspace(t, s, "bob", "bobs")
	key := func(mod func(*keys.APIKey)) keys.APIKey {
		_, k, err := keys.NewKey()
		if err != nil {
			t.Fatal(err)
		}
		k.UserID, k.Name, k.Role, k.CreatedAt = "alice", "k", keys.RoleStandard, time.Now()
		if mod != nil {
			mod(&k)
		}
		return k
	}
	existing := key(nil)
	if err := s.CreateKey(ctx, existing); err != nil {
		t.Fatalf("CreateKey: %v", err)
	}

	tests := []struct {
		name string
		key  keys.APIKey
		want error
	}{
		{"duplicate id", key(func(k *keys.APIKey) { k.ID = existing.ID }), ErrConflict},
		{"unknown user", key(func(k *keys.APIKey) { k.UserID = "nobody" }), ErrUserNotFound},
		{"another user's workspace", key(func(k *keys.APIKey) { k.WorkspaceID = bobs.ID }), workspace.ErrNotFound},
		{"unknown workspace", key(func(k *keys.APIKey) { k.WorkspaceID = uuid.NewString() }), workspace.ErrNotFound},
		{"workspace id not a UUID", key(func(k *keys.APIKey) { k.WorkspaceID = "bobs" }), workspace.ErrNotFound},
		{"unknown role", key(func(k *keys.APIKey) { k.Role = "root" }), ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.CreateKey(ctx, tt.key)
			if !errors.Is(err, tt.want) {
				t.Fatalf("CreateKey = %v, want %v", err, tt.want)
			}
			if tt.key.ID != existing.ID {
				if _, err := s.KeyByID(ctx, tt.key.ID); !errors.Is(err, keys.ErrKeyNotFound) {
					t.Errorf("after a failed CreateKey, KeyByID = %v, want ErrKeyNotFound", err)
				}
			}
		})
	}
	if _, err := s.KeyByID(ctx, "0000000000000000"); !errors.Is(err, keys.ErrKeyNotFound) {
		t.Errorf("KeyByID(unknown) = %v, want ErrKeyNotFound", err)
	}
}

func testEnsureUserConcurrent(t *testing.T, b backend) {
	s := b.store(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() { errs <- s.EnsureUser(testContext(t), "carol") })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("EnsureUser: %v", err)
		}
	}
	mustUser(t, s, "carol")
	if n := count(t, s, `SELECT COUNT(*) FROM users WHERE id = $1`, "carol"); n != 1 {
		t.Errorf("%d rows for the user, want 1", n)
	}
	if err := s.EnsureUser(testContext(t), ""); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("EnsureUser(\"\") = %v, want ErrInvalidArgument", err)
	}
}

func testWorkspaceRoundTrip(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	updated := time.Date(2026, 3, 4, 5, 6, 7, 890123000, time.UTC)

	full := newWorkspace("alice", "full")
	full.Description = "Ünïcode description ✓"
	full.DefaultTextModel = ptr("openai/gpt-5")
	full.DefaultImageModel = ptr("google/imagen-4")
	full.DefaultProviderSort = ptr("latency")
	full.UpdatedAt = &updated
	full.IncludeBYOKInBudgets = true
	full.IOLoggingAPIKeyIDs = []string{"0123456789abcdef", "fedcba9876543210"}
	full.IOLoggingSamplingRate = 0.0001
	full.IsDataDiscountLoggingEnabled = false
	full.IsObservabilityBroadcastEnabled = true
	full.IsObservabilityIOLoggingEnabled = true

	emptyList := newWorkspace("alice", "empty-list")
	emptyList.IOLoggingAPIKeyIDs = []string{}

	tests := []struct {
		name string
		w    workspace.Workspace
	}{
		{"defaults (nulls stay null)", newWorkspace("alice", "defaults")},
		{"every field set", full},
		{"empty key id list stays empty", emptyList},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prior, err := s.CreateWorkspace(ctx, tt.w, nil)
			if err != nil || prior != nil {
				t.Fatalf("CreateWorkspace = %v, %v; want nil, nil", prior, err)
			}
			byID, err := s.WorkspaceByID(ctx, "alice", tt.w.ID)
			if err != nil {
				t.Fatalf("WorkspaceByID: %v", err)
			}
			bySlug, err := s.WorkspaceBySlug(ctx, "alice", tt.w.Slug)
			if err != nil {
				t.Fatalf("WorkspaceBySlug: %v", err)
			}
			for name, got := range map[string]workspace.Workspace{"ByID": byID, "BySlug": bySlug} {
				if !reflect.DeepEqual(got, tt.w) {
					t.Errorf("%s =\n%+v\nwant\n%+v", name, got, tt.w)
				}
				if (got.IOLoggingAPIKeyIDs == nil) != (tt.w.IOLoggingAPIKeyIDs == nil) {
					t.Errorf("%s: io_logging_api_key_ids nil-ness changed: %#v", name, got.IOLoggingAPIKeyIDs)
				}
			}
		})
	}
}

func testWorkspaceTimestamps(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	zone := time.FixedZone("UTC-7", -7*3600)
	tests := []struct {
		name string
		in   time.Time
		want time.Time
	}{
		{"microseconds in another zone", time.Date(2026, 8, 18, 23, 59, 59, 999999000, zone),
			time.Date(2026, 8, 19, 6, 59, 59, 999999000, time.UTC)},
		{"nanoseconds are truncated", time.Date(2026, 8, 18, 1, 2, 3, 456789999, time.UTC),
			time.Date(2026, 8, 18, 1, 2, 3, 456789000, time.UTC)},
		{"before 1970", time.Date(1969, 12, 31, 23, 59, 59, 1000, time.UTC),
			time.Date(1969, 12, 31, 23, 59, 59, 1000, time.UTC)},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorkspace("alice", fmt.Sprintf("ts-%d", i))
			w.CreatedAt = tt.in
			w.UpdatedAt = &tt.in
			if _, err := s.CreateWorkspace(ctx, w, nil); err != nil {
				t.Fatal(err)
			}
			got, err := s.WorkspaceByID(ctx, "alice", w.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.CreatedAt != tt.want {
				t.Errorf("created_at = %v, want %v (exactly, in UTC)", got.CreatedAt, tt.want)
			}
			if got.UpdatedAt == nil || *got.UpdatedAt != tt.want {
				t.Errorf("updated_at = %v, want %v", got.UpdatedAt, tt.want)
			}
		})
	}
}

func testWorkspaceVisibility(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	mustUser(t, s, "bob")
	alices := mustWorkspace(t, s, "alice", "shared-slug")
	bobs := mustWorkspace(t, s, "bob", "shared-slug") // slugs are unique per user only

	if got, err := s.WorkspaceBySlug(ctx, "bob", "shared-slug"); err != nil || got.ID != bobs.ID {
		t.Errorf("WorkspaceBySlug(bob) = %v, %v; want bob's workspace", got.ID, err)
	}
	upper, _ := uuid.Parse(alices.ID)
	if got, err := s.WorkspaceByID(ctx, "alice", fmt.Sprintf("%X", upper[:])); err == nil {
		t.Errorf("WorkspaceByID(32 hex digits) = %v; only the 36-character form names a workspace", got.ID)
	}

	tests := []struct {
		name   string
		lookup func() (workspace.Workspace, error)
	}{
		{"another user's id", func() (workspace.Workspace, error) { return s.WorkspaceByID(ctx, "bob", alices.ID) }},
		{"unknown id", func() (workspace.Workspace, error) { return s.WorkspaceByID(ctx, "alice", uuid.NewString()) }},
		{"id not a UUID", func() (workspace.Workspace, error) { return s.WorkspaceByID(ctx, "alice", "shared-slug") }},
		{"empty id", func() (workspace.Workspace, error) { return s.WorkspaceByID(ctx, "alice", "") }},
		{"unknown slug", func() (workspace.Workspace, error) { return s.WorkspaceBySlug(ctx, "alice", "nope") }},
		{"slug of an unknown user", func() (workspace.Workspace, error) { return s.WorkspaceBySlug(ctx, "eve", "shared-slug") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := tt.lookup(); !errors.Is(err, workspace.ErrNotFound) {
				t.Errorf("lookup = %v, %v; want ErrNotFound", got.ID, err)
			}
		})
	}

	t.Run("uppercase id", func(t *testing.T) {
		got, err := s.WorkspaceByID(ctx, "alice", upperUUID(alices.ID))
		if err != nil || got.ID != alices.ID {
			t.Errorf("WorkspaceByID(uppercase) = %v, %v; want %s on every database", got.ID, err, alices.ID)
		}
	})
}

func upperUUID(id string) string {
	out := []byte(id)
	for i, c := range out {
		if 'a' <= c && c <= 'f' {
			out[i] = c - 'a' + 'A'
		}
	}
	return string(out)
}

func testWorkspaceErrors(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	first := mustWorkspace(t, s, "alice", "taken")

	sameID := newWorkspace("alice", "other")
	sameID.ID = first.ID
	upperID := newWorkspace("alice", "upper")
	upperID.ID = upperUUID(upperID.ID)
	notUUID := newWorkspace("alice", "not-uuid")
	notUUID.ID = "not-a-uuid"
	tests := []struct {
		name string
		w    workspace.Workspace
		want error
	}{
		{"slug taken", newWorkspace("alice", "taken"), workspace.ErrSlugTaken},
		{"id reused", sameID, ErrConflict},
		{"unknown user", newWorkspace("nobody", "fresh"), ErrUserNotFound},
		{"uppercase id", upperID, ErrInvalidArgument},
		{"id not a UUID", notUUID, ErrInvalidArgument},
		{"empty slug", newWorkspace("alice", ""), ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := s.CreateWorkspace(ctx, tt.w, nil); !errors.Is(err, tt.want) {
				t.Fatalf("CreateWorkspace = %v, want %v", err, tt.want)
			}
		})
	}
	if n := count(t, s, `SELECT COUNT(*) FROM workspaces`); n != 1 {
		t.Errorf("%d workspaces after failed creates, want 1", n)
	}
}

// testSlugRace: 16 concurrent creates of one slug by one user yield exactly
// one success and 15 ErrSlugTaken.
func testSlugRace(t *testing.T, b backend) {
	s := b.store(t)
	mustUser(t, s, "alice")
	const n = 16
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			_, errs[i] = s.CreateWorkspace(testContext(t), newWorkspace("alice", "race"), nil)
		})
	}
	close(start)
	wg.Wait()
	if ok, taken := slugRaceOutcome(t, errs); ok != 1 || taken != n-1 {
		t.Errorf("%d created, %d ErrSlugTaken; want 1 and %d", ok, taken, n-1)
	}
	if c := count(t, s, `SELECT COUNT(*) FROM workspaces WHERE created_by = $1 AND slug = $2`, "alice", "race"); c != 1 {
		t.Errorf("%d rows for the slug, want 1", c)
	}
}

// slugRaceOutcome counts the successes and ErrSlugTaken among errs; any
// other error fails the test.
func slugRaceOutcome(t *testing.T, errs []error) (ok, taken int) {
	t.Helper()
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, workspace.ErrSlugTaken):
			taken++
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	return ok, taken
}

func idemFor(user, key string, w workspace.Workspace) *workspace.Idempotency {
	sum := sha256.Sum256([]byte(w.Slug))
	return &workspace.Idempotency{
		UserID:      user,
		Scope:       workspace.ScopeCreate,
		Key:         key,
		RequestHash: fmt.Sprintf("%x", sum),
		Workspace:   w,
	}
}

func testIdempotencyReplay(t *testing.T, b backend) {
	s := b.store(t)
	clock := useClock(s)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	mustUser(t, s, "bob")

	w1 := newWorkspace("alice", "one")
	rec := idemFor("alice", "k1", w1)
	if prior, err := s.CreateWorkspace(ctx, w1, rec); err != nil || prior != nil {
		t.Fatalf("first CreateWorkspace = %v, %v; want nil, nil", prior, err)
	}
	clock.advance(workspace.IdempotencyTTL - time.Second)

	// A retry, even with another body, creates nothing and gets the record.
	w2 := newWorkspace("alice", "two")
	prior, err := s.CreateWorkspace(ctx, w2, idemFor("alice", "k1", w2))
	if err != nil || prior == nil {
		t.Fatalf("retry = %v, %v; want the prior record", prior, err)
	}
	want := *rec
	want.CreatedAt = time.Date(2026, 8, 18, 12, 0, 0, 0, time.UTC)
	if !reflect.DeepEqual(*prior, want) { // the recorded workspace round-trips exactly
		t.Errorf("prior =\n%+v\nwant\n%+v", *prior, want)
	}
	if _, err := s.WorkspaceBySlug(ctx, "alice", "two"); !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("the retry created a workspace: %v", err)
	}
	// Keys are per user: bob's k1 is another key.
	wb := newWorkspace("bob", "one")
	if prior, err := s.CreateWorkspace(ctx, wb, idemFor("bob", "k1", wb)); err != nil || prior != nil {
		t.Errorf("bob's CreateWorkspace with alice's key = %v, %v; want nil, nil", prior, err)
	}
	// The record must name the creating user.
	w3 := newWorkspace("alice", "three")
	if _, err := s.CreateWorkspace(ctx, w3, idemFor("bob", "k3", w3)); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("record of another user = %v, want ErrInvalidArgument", err)
	}
}

func testIdempotencyExpired(t *testing.T, b backend) {
	s := b.store(t)
	clock := useClock(s)
	ctx := testContext(t)
	mustUser(t, s, "alice")

	w1 := newWorkspace("alice", "one")
	if _, err := s.CreateWorkspace(ctx, w1, idemFor("alice", "k1", w1)); err != nil {
		t.Fatal(err)
	}
	wOther := newWorkspace("alice", "other")
	if _, err := s.CreateWorkspace(ctx, wOther, idemFor("alice", "k-other", wOther)); err != nil {
		t.Fatal(err)
	}
	clock.advance(workspace.IdempotencyTTL)

	// 24 h later the key is free again: the record is replaced.
	w2 := newWorkspace("alice", "two")
	rec2 := idemFor("alice", "k1", w2)
	if prior, err := s.CreateWorkspace(ctx, w2, rec2); err != nil || prior != nil {
		t.Fatalf("CreateWorkspace after expiry = %v, %v; want nil, nil", prior, err)
	}
	w3 := newWorkspace("alice", "three")
	prior, err := s.CreateWorkspace(ctx, w3, idemFor("alice", "k1", w3))
	if err != nil || prior == nil || prior.RequestHash != rec2.RequestHash || !reflect.DeepEqual(prior.Workspace, w2) {
		t.Fatalf("replay after replacement = %+v, %v; want the second record", prior, err)
	}
	// Other expired records of the user were swept by the successful create.
	if n := count(t, s, `SELECT COUNT(*) FROM idempotency_records WHERE user_id = $1`, "alice"); n != 1 {
		t.Errorf("%d idempotency rows, want 1 (expired ones dropped)", n)
	}
}

func testIdempotencyFailedCreate(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	mustWorkspace(t, s, "alice", "taken")

	w := newWorkspace("alice", "taken")
	if _, err := s.CreateWorkspace(ctx, w, idemFor("alice", "k1", w)); !errors.Is(err, workspace.ErrSlugTaken) {
		t.Fatalf("CreateWorkspace = %v, want ErrSlugTaken", err)
	}
	if n := count(t, s, `SELECT COUNT(*) FROM idempotency_records`); n != 0 {
		t.Errorf("%d idempotency rows after a failed create, want 0", n)
	}
	w2 := newWorkspace("alice", "free")
	if prior, err := s.CreateWorkspace(ctx, w2, idemFor("alice", "k1", w2)); err != nil || prior != nil {
		t.Errorf("retry with a free slug = %v, %v; want nil, nil", prior, err)
	}
	wu := newWorkspace("nobody", "x")
	if _, err := s.CreateWorkspace(ctx, wu, idemFor("nobody", "k1", wu)); !errors.Is(err, ErrUserNotFound) {
		t.Errorf("idempotent create for an unknown user = %v, want ErrUserNotFound", err)
	}
}

// testIdempotencyRace: concurrent calls with one key create one workspace;
// every other call gets the winner's record.
func testIdempotencyRace(t *testing.T, b backend) {
	s := b.store(t)
	mustUser(t, s, "alice")
	const n = 16
	type result struct {
		w     workspace.Workspace
		rec   *workspace.Idempotency
		prior *workspace.Idempotency
		err   error
	}
	results := make([]result, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		// Distinct slugs, so only the idempotency key can stop a create.
		w := newWorkspace("alice", fmt.Sprintf("idem-%d", i))
		results[i] = result{w: w, rec: idemFor("alice", "same-key", w)}
		wg.Go(func() {
			<-start
			results[i].prior, results[i].err = s.CreateWorkspace(testContext(t), results[i].w, results[i].rec)
		})
	}
	close(start)
	wg.Wait()
	var winner *result
	for i := range results {
		r := &results[i]
		if r.err != nil {
			t.Fatalf("CreateWorkspace: %v", r.err)
		}
		if r.prior == nil {
			if winner != nil {
				t.Fatalf("two calls created a workspace: %s and %s", winner.w.Slug, r.w.Slug)
			}
			winner = r
		}
	}
	if winner == nil {
		t.Fatal("no call created the workspace")
	}
	for _, r := range results {
		if r.prior != nil && (r.prior.RequestHash != winner.rec.RequestHash || !reflect.DeepEqual(r.prior.Workspace, winner.w)) {
			t.Errorf("a loser got %+v, want the winner's record", r.prior)
		}
	}
	if c := count(t, s, `SELECT COUNT(*) FROM workspaces WHERE created_by = $1`, "alice"); c != 1 {
		t.Errorf("%d workspaces, want 1", c)
	}
}

// quotaFixture is a store with one user and workspace.
func quotaFixture(t *testing.T, b backend) (*Store, workspace.Workspace) {
	s := b.store(t)
	mustUser(t, s, "alice")
	return s, mustWorkspace(t, s, "alice", "files")
}

func record(ws string, size int64) files.Record {
	return files.Record{
		ID:          "file-" + uuid.NewString(),
		WorkspaceID: ws,
		KeyID:       "0123456789abcdef",
		Filename:    "docs/report.pdf",
		MimeType:    "application/pdf",
		Size:        size,
		Backend:     "fs",
		ObjectKey:   "objects/" + uuid.NewString(),
		Purpose:     files.PurposeBatch, // not the column's default, so a lost value shows
		CreatedAt:   time.Date(2026, 8, 18, 10, 11, 12, 131415000, time.UTC),
	}
}

func testReserveCommit(t *testing.T, b backend) {
	s, ws := quotaFixture(t, b)
	ctx := testContext(t)
	if n, err := s.StoredBytes(ctx, ws.ID); err != nil || n != 0 {
		t.Fatalf("StoredBytes of a new workspace = %d, %v; want 0", n, err)
	}
	res, err := s.Reserve(ctx, ws.ID, 1000, 10_000, time.Minute)
	if err != nil {
		t.Fatalf("Reserve: %v", err)
	}
	if res.ID == "" || res.WorkspaceID != ws.ID || res.Bytes != 1000 || !res.ExpiresAt.After(time.Now()) {
		t.Errorf("Reservation = %+v", res)
	}
	rec := record(ws.ID, 700)
	if err := s.Commit(ctx, res, rec); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	got, err := s.FileByID(ctx, ws.ID, rec.ID)
	if err != nil {
		t.Fatalf("FileByID: %v", err)
	}
	if !reflect.DeepEqual(got, rec) {
		t.Errorf("FileByID =\n%+v\nwant\n%+v", got, rec)
	}
	if n, err := s.StoredBytes(ctx, ws.ID); err != nil || n != 700 {
		t.Errorf("StoredBytes = %d, %v; want 700", n, err)
	}
	if n := count(t, s, `SELECT COUNT(*) FROM quota_reservations`); n != 0 {
		t.Errorf("%d reservations left after Commit, want 0", n)
	}
	// The reservation is settled: a second Commit inserts nothing.
	again := record(ws.ID, 1)
	if err := s.Commit(ctx, res, again); !errors.Is(err, files.ErrReservationNotFound) {
		t.Errorf("second Commit = %v, want ErrReservationNotFound", err)
	}
	if _, err := s.FileByID(ctx, ws.ID, again.ID); !errors.Is(err, files.ErrNotFound) {
		t.Errorf("FileByID after a refused Commit = %v, want ErrNotFound", err)
	}
	// Only the workspace's own records are visible.
	mustUser(t, s, "bob")
	other := mustWorkspace(t, s, "bob", "other")
	for name, lookup := range map[string][2]string{
		"other workspace": {other.ID, rec.ID},
		"unknown file":    {ws.ID, "file-unknown"},
		"malformed ws id": {"nope", rec.ID},
	} {
		if _, err := s.FileByID(ctx, lookup[0], lookup[1]); !errors.Is(err, files.ErrNotFound) {
			t.Errorf("FileByID(%s) = %v, want ErrNotFound", name, err)
		}
	}
	if n, err := s.StoredBytes(ctx, other.ID); err != nil || n != 0 {
		t.Errorf("StoredBytes(other) = %d, %v; want 0", n, err)
	}
}

func testQuotaExceeded(t *testing.T, b backend) {
	s, ws := quotaFixture(t, b)
	ctx := testContext(t)
	const limit = 1000
	if _, err := s.Reserve(ctx, ws.ID, 600, limit, time.Minute); err != nil {
		t.Fatal(err)
	}
	_, err := s.Reserve(ctx, ws.ID, 401, limit, time.Minute)
	if !errors.Is(err, files.ErrQuotaExceeded) {
		t.Fatalf("Reserve over the limit = %v, want ErrQuotaExceeded", err)
	}
	var qe *QuotaError
	if !errors.As(err, &qe) || *qe != (QuotaError{Limit: limit, Reserved: 600, Requested: 401}) {
		t.Errorf("QuotaError = %+v", qe)
	}
	if md := qe.Metadata(); md["limit_bytes"] != int64(limit) || md["requested_bytes"] != int64(401) {
		t.Errorf("Metadata = %v", md)
	}
	if _, err := s.Reserve(ctx, ws.ID, 400, limit, time.Minute); err != nil {
		t.Errorf("Reserve exactly up to the limit: %v", err)
	}
	tests := []struct {
		name       string
		ws         string
		bytes, lim int64
		ttl        time.Duration
		want       error
	}{
		{"unknown workspace", uuid.NewString(), 1, limit, time.Minute, workspace.ErrNotFound},
		{"malformed workspace id", "files", 1, limit, time.Minute, workspace.ErrNotFound},
		{"negative bytes", ws.ID, -1, limit, time.Minute, ErrInvalidArgument},
		{"zero ttl", ws.ID, 1, limit, 0, ErrInvalidArgument},
		{"huge request cannot overflow", ws.ID, 1<<63 - 1, limit, time.Minute, files.ErrQuotaExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := s.Reserve(ctx, tt.ws, tt.bytes, tt.lim, tt.ttl); !errors.Is(err, tt.want) {
				t.Errorf("Reserve = %v, want %v", err, tt.want)
			}
		})
	}
}

func testRelease(t *testing.T, b backend) {
	s, ws := quotaFixture(t, b)
	ctx := testContext(t)
	res, err := s.Reserve(ctx, ws.ID, 1000, 1000, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // releasing twice is harmless
		if err := s.Release(ctx, res); err != nil {
			t.Fatalf("Release #%d: %v", i+1, err)
		}
	}
	if _, err := s.Reserve(ctx, ws.ID, 1000, 1000, time.Minute); err != nil {
		t.Errorf("Reserve after Release: %v", err)
	}
	rec := record(ws.ID, 10)
	if err := s.Commit(ctx, res, rec); !errors.Is(err, files.ErrReservationNotFound) {
		t.Errorf("Commit after Release = %v, want ErrReservationNotFound", err)
	}
	if _, err := s.FileByID(ctx, ws.ID, rec.ID); !errors.Is(err, files.ErrNotFound) {
		t.Errorf("Commit after Release inserted the record: %v", err)
	}
	if n, _ := s.StoredBytes(ctx, ws.ID); n != 0 {
		t.Errorf("StoredBytes = %d, want 0", n)
	}
}

func testReservationExpiry(t *testing.T, b backend) {
	s, ws := quotaFixture(t, b)
	clock := useClock(s)
	ctx := testContext(t)
	old, err := s.Reserve(ctx, ws.ID, 1000, 1000, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reserve(ctx, ws.ID, 1, 1000, time.Minute); !errors.Is(err, files.ErrQuotaExceeded) {
		t.Fatalf("Reserve while full = %v, want ErrQuotaExceeded", err)
	}
	clock.advance(time.Minute)
	// Expired: it no longer counts, and it is cleaned up.
	if _, err := s.Reserve(ctx, ws.ID, 1000, 1000, time.Minute); err != nil {
		t.Fatalf("Reserve after expiry: %v", err)
	}
	if n := count(t, s, `SELECT COUNT(*) FROM quota_reservations WHERE id = $1`, old.ID); n != 0 {
		t.Errorf("expired reservation still stored")
	}
	rec := record(ws.ID, 10)
	if err := s.Commit(ctx, old, rec); !errors.Is(err, files.ErrReservationNotFound) {
		t.Errorf("Commit of an expired reservation = %v, want ErrReservationNotFound", err)
	}
	// An expired reservation that was never swept cannot be committed either.
	r2, err := s.Reserve(ctx, ws.ID, 0, 1000, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	clock.advance(time.Second)
	if err := s.Commit(ctx, r2, record(ws.ID, 0)); !errors.Is(err, files.ErrReservationNotFound) {
		t.Errorf("Commit at its expiry instant = %v, want ErrReservationNotFound", err)
	}
	if n := count(t, s, `SELECT COUNT(*) FROM files`); n != 0 {
		t.Errorf("%d file rows, want 0", n)
	}
}

func testCommitErrors(t *testing.T, b backend) {
	s, ws := quotaFixture(t, b)
	ctx := testContext(t)
	mustUser(t, s, "bob")
	other := mustWorkspace(t, s, "bob", "other")
	res, err := s.Reserve(ctx, ws.ID, 100, 1000, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	committed := record(ws.ID, 10)
	setup, err := s.Reserve(ctx, ws.ID, 10, 1000, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, setup, committed); err != nil {
		t.Fatal(err)
	}

	dup := record(ws.ID, 10)
	dup.ID = committed.ID
	tests := []struct {
		name string
		rec  files.Record
		want error
	}{
		{"larger than reserved", record(ws.ID, 101), files.ErrQuotaExceeded},
		{"record of another workspace", record(other.ID, 10), files.ErrReservationNotFound},
		{"record id reused", dup, ErrConflict},
		{"negative size", record(ws.ID, -1), ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.Commit(ctx, res, tt.rec); !errors.Is(err, tt.want) {
				t.Fatalf("Commit = %v, want %v", err, tt.want)
			}
		})
	}
	// Every failure rolled back: the reservation is intact and usable.
	if n, _ := s.StoredBytes(ctx, ws.ID); n != 10 {
		t.Errorf("StoredBytes = %d, want 10", n)
	}
	if n := count(t, s, `SELECT COUNT(*) FROM files`); n != 1 {
		t.Errorf("%d file rows, want 1", n)
	}
	if err := s.Commit(ctx, res, record(ws.ID, 100)); err != nil {
		t.Errorf("Commit after the refused ones: %v", err)
	}
}

// testQuotaRace: 20 concurrent Reserve+Commit of random sizes against a
// nearly full quota never store more than the limit.
func testQuotaRace(t *testing.T, b backend) {
	s, ws := quotaFixture(t, b)
	ctx := testContext(t)
	const limit = 100_000
	seed, err := s.Reserve(ctx, ws.ID, limit-1000, limit, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, seed, record(ws.ID, limit-1000)); err != nil {
		t.Fatal(err)
	}

	const n = 20
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := make([]int64, n)
	for i := range sizes {
		sizes[i] = 50 + rng.Int64N(251) // 50..300: about 7 of 20 fit in the 1000 left
	}
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			ctx := testContext(t)
			res, err := s.Reserve(ctx, ws.ID, sizes[i], limit, time.Minute)
			if err != nil {
				errs[i] = err
				return
			}
			errs[i] = s.Commit(ctx, res, record(ws.ID, sizes[i]))
		})
	}
	close(start)
	wg.Wait()
	var ok, refused int
	var sum int64 = limit - 1000
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
			sum += sizes[i]
		case errors.Is(err, files.ErrQuotaExceeded):
			refused++
		default:
			t.Errorf("upload %d: %v", i, err)
		}
	}
	stored, err := s.StoredBytes(ctx, ws.ID)
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	rawQuery(t, s.r, &rows, `SELECT CAST(COALESCE(SUM(size), 0) AS BIGINT) FROM files WHERE workspace_id = $1`, ws.ID)
	if stored > limit || stored != sum || rows != sum {
		t.Errorf("stored %d (records sum %d), committed sum %d, limit %d", stored, rows, sum, limit)
	}
	if ok == 0 || refused == 0 {
		t.Errorf("%d committed, %d refused: the race did not reach the limit", ok, refused)
	}
	t.Logf("%d committed, %d refused, %d of %d bytes stored", ok, refused, stored, limit)
}

func testProviderKeys(t *testing.T, b backend) {
	s, ws := quotaFixture(t, b)
	ctx := testContext(t)
	if _, err := s.ProviderKey(ctx, ws.ID, "openai", "k1"); !errors.Is(err, files.ErrNoProviderKey) {
		t.Fatalf("ProviderKey before Put = %v, want ErrNoProviderKey", err)
	}
	sealed := []byte{0, 1, 2, 0xff, 0xfe}
	if err := s.PutProviderKey(ctx, ws.ID, "openai", sealed, "sk-...abcd"); err != nil {
		t.Fatalf("PutProviderKey: %v", err)
	}
	replaced := []byte("sealed-2")
	if err := s.PutProviderKey(ctx, ws.ID, "openai", replaced, "sk-...efgh"); err != nil {
		t.Fatalf("PutProviderKey (replace): %v", err)
	}
	got, err := s.ProviderKey(ctx, ws.ID, "openai", "k1")
	if err != nil || string(got) != string(replaced) {
		t.Errorf("ProviderKey = %q, %v; want %q", got, err, replaced)
	}
	if page, total, err := s.ListProviderKeys(ctx, ws.CreatedBy, keys.ProviderKeyQuery{Limit: 10}); err != nil || total != 1 ||
		len(page) != 1 || !page[0].FromCLI || page[0].Label != "sk-...efgh" {
		t.Errorf("the CLI's key over HTTP: %+v, %d, %v; want one, replaced in place", page, total, err)
	}
	if _, err := s.ProviderKey(ctx, ws.ID, "anthropic", "k1"); !errors.Is(err, files.ErrNoProviderKey) {
		t.Errorf("ProviderKey(other provider) = %v, want ErrNoProviderKey", err)
	}
	if _, err := s.ProviderKey(ctx, "not-a-uuid", "openai", "k1"); !errors.Is(err, files.ErrNoProviderKey) {
		t.Errorf("ProviderKey(malformed workspace) = %v, want ErrNoProviderKey", err)
	}
	if err := s.PutProviderKey(ctx, uuid.NewString(), "openai", sealed, "x"); !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("PutProviderKey(unknown workspace) = %v, want workspace.ErrNotFound", err)
	}
	if err := s.PutProviderKey(ctx, ws.ID, "", sealed, "x"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("PutProviderKey(no provider) = %v, want ErrInvalidArgument", err)
	}
}

// testProviderKeyChoice: a file route uses the workspace's enabled key of
// the provider that the calling key may use, lowest sort_order first.
func testProviderKeyChoice(t *testing.T, b backend) {
	s, ws := quotaFixture(t, b)
	ctx := testContext(t)
	user := ws.CreatedBy
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	put := func(sealed string, order int, disabled bool, allowed []string) keys.ProviderKey {
		t.Helper()
		k := keys.ProviderKey{ID: uuid.NewString(), UserID: user, WorkspaceID: ws.ID, Provider: "openai",
			Label: "l", Sealed: []byte(sealed), SortOrder: order, Disabled: disabled, AllowedAPIKeys: allowed,
			CreatedAt: base}
		base = base.Add(time.Second)
		if err := s.CreateProviderKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		return k
	}
	put("late", 5, false, nil)
	first := put("first-but-disabled", 0, true, nil)
	put("only-for-ci", 1, false, []string{"00000000000000c1"})
	put("for-all", 2, false, nil)
	for keyID, want := range map[string]string{"00000000000000c1": "only-for-ci", "0000000000000002": "for-all"} {
		got, err := s.ProviderKey(ctx, ws.ID, "openai", keyID)
		if err != nil || string(got) != want {
			t.Errorf("key %s uses %q, %v; want %q", keyID, got, err, want)
		}
	}
	// Enabling the first makes it win; another user cannot touch it.
	if _, err := s.UpdateProviderKey(ctx, "mallory", first.ID, keys.ProviderKeyFields{Disabled: keys.Optional[bool]{Set: true}}, nil, base); !errors.Is(err, keys.ErrProviderKeyNotFound) {
		t.Fatalf("another user's update: %v", err)
	}
	upd, err := s.UpdateProviderKey(ctx, user, first.ID, keys.ProviderKeyFields{Disabled: keys.Optional[bool]{Set: true}},
		&keys.SealedSecret{Sealed: []byte("first-rotated"), Label: "new"}, base)
	if err != nil || upd.Disabled || upd.Label != "new" || upd.UpdatedAt == nil {
		t.Fatalf("update: %+v, %v", upd, err)
	}
	if got, err := s.ProviderKey(ctx, ws.ID, "openai", "0000000000000002"); err != nil || string(got) != "first-rotated" {
		t.Errorf("after enabling: %q, %v", got, err)
	}
	page, total, err := s.ListProviderKeys(ctx, user, keys.ProviderKeyQuery{Limit: 2, Offset: 1})
	if err != nil || total != 4 || len(page) != 2 || page[0].ID != first.ID {
		t.Errorf("list page: %d of %d, %v", len(page), total, err)
	}
	if err := s.DeleteProviderKey(ctx, "mallory", first.ID); !errors.Is(err, keys.ErrProviderKeyNotFound) {
		t.Errorf("another user's delete: %v", err)
	}
	if err := s.DeleteProviderKey(ctx, user, first.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UserProviderKey(ctx, user, first.ID); !errors.Is(err, keys.ErrProviderKeyNotFound) {
		t.Errorf("deleted key: %v", err)
	}
}
