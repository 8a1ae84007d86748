package files

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/workspace"
)

// testClock is a clock the test moves.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestExpiring(t *testing.T) {
	const ttl = time.Second
	setup := func() (*testClock, *expiring[string, int]) {
		clk := &testClock{t: fixedNow}
		return clk, newExpiring[string, int](ttl, clk.now)
	}
	want := func(t *testing.T, c *expiring[string, int], k string, v int, fresh bool) {
		t.Helper()
		got, ok, _ := c.get(k)
		if ok != fresh || ok && got != v {
			t.Errorf("get(%q) = %d, %v; want %d, %v", k, got, ok, v, fresh)
		}
	}

	t.Run("fresh for ttl", func(t *testing.T) {
		clk, c := setup()
		_, ok, tk := c.get("a")
		if ok {
			t.Fatal("hit in an empty cache")
		}
		c.put("a", 1, tk)
		want(t, c, "a", 1, true)
		clk.advance(ttl - time.Nanosecond)
		want(t, c, "a", 1, true)
		clk.advance(time.Nanosecond)
		want(t, c, "a", 0, false)
	})
	t.Run("trusted from when its loading began", func(t *testing.T) {
		clk, c := setup()
		_, _, tk := c.get("a")
		clk.advance(600 * time.Millisecond) // a slow store
		c.put("a", 1, tk)
		clk.advance(399 * time.Millisecond)
		want(t, c, "a", 1, true)
		clk.advance(time.Millisecond)
		want(t, c, "a", 0, false)
	})
	t.Run("forget drops everything", func(t *testing.T) {
		_, c := setup()
		for _, k := range []string{"a", "b"} {
			_, _, tk := c.get(k)
			c.put(k, 1, tk)
		}
		c.forget()
		want(t, c, "a", 0, false)
		want(t, c, "b", 0, false)
	})
	t.Run("a value loaded before forget is not kept", func(t *testing.T) {
		_, c := setup()
		_, _, before := c.get("a") // reads the store, then the change is committed...
		c.forget()                 // ...and forgotten,
		c.put("a", 1, before)      // and what was read before it arrives.
		want(t, c, "a", 0, false)
		_, _, after := c.get("a")
		c.put("a", 2, after)
		want(t, c, "a", 2, true)
	})
	t.Run("expired entries are dropped by later puts", func(t *testing.T) {
		clk, c := setup()
		put := func(k string) {
			_, _, tk := c.get(k)
			c.put(k, 1, tk)
		}
		put("idle")
		clk.advance(ttl / 2)
		put("busy")
		if len(c.entries) != 2 {
			t.Fatalf("%d entries, want 2", len(c.entries))
		}
		clk.advance(ttl) // idle expired half a ttl ago, busy just now
		put("other")
		if _, kept := c.entries["idle"]; kept || len(c.entries) != 1 {
			t.Errorf("entries %v after a ttl: want only the one just put", c.entries)
		}
	})
	t.Run("bounded: expired entries go first, then all", func(t *testing.T) {
		clk, c := setup()
		c.maxItems = 2
		put := func(k string, v int) {
			_, _, tk := c.get(k)
			c.put(k, v, tk)
		}
		put("old", 1)
		clk.advance(ttl / 2)
		put("young", 2)
		clk.advance(ttl / 2) // old expired, young not
		put("new", 3)
		want(t, c, "young", 2, true)
		want(t, c, "new", 3, true)
		if len(c.entries) != 2 {
			t.Errorf("%d entries, want 2", len(c.entries))
		}
		put("newest", 4) // full of live entries: start over
		want(t, c, "young", 0, false)
		want(t, c, "newest", 4, true)
	})
}

// newLookupRig is a read rig whose service remembers lookups for ttl, on
// the clock it returns.
func newLookupRig(t *testing.T, ttl time.Duration) (*readRig, *testClock) {
	t.Helper()
	base := newRig(t)
	clk := &testClock{t: fixedNow}
	rs, err := NewReadService(ReadConfig{CursorKey: testCursors, LookupTTL: ttl, now: clk.now}, ReadDeps{
		Records: base.store, Keys: base.store, Bucket: base.bucket, Opener: base.opener, Workspaces: base.ws,
		Log: slog.New(base.logs),
	})
	if err != nil {
		t.Fatal(err)
	}
	return &readRig{rig: base, r: rs}, clk
}

func TestReadLookups(t *testing.T) {
	const ttl = time.Second
	ctx := context.Background()
	other := Target{Key: aliceMgmt, WorkspaceID: aliceOther, Provider: ProviderOpenAI}
	list := func(t *testing.T, r *readRig, target Target) error {
		t.Helper()
		_, err := r.r.List(ctx, ListParams{Target: target})
		return err
	}
	// reads says how often the store was asked for the workspace and the
	// provider key (each open follows one key read).
	reads := func(t *testing.T, r *readRig, workspaces, opened int) {
		t.Helper()
		if r.ws.getCalled+r.ws.defaultCalled != workspaces || len(r.opener.opened) != opened {
			t.Errorf("workspace lookups %d, keys opened %d; want %d, %d",
				r.ws.getCalled+r.ws.defaultCalled, len(r.opener.opened), workspaces, opened)
		}
	}

	t.Run("remembered for ttl, forgotten on Forget", func(t *testing.T) {
		r, clk := newLookupRig(t, ttl)
		r.store.keys[aliceOther+"/"+ProviderOpenAI] = []byte("sk-other")
		for range 3 {
			if err := list(t, r, other); err != nil {
				t.Fatal(err)
			}
		}
		reads(t, r, 1, 1)
		clk.advance(ttl)
		if err := list(t, r, other); err != nil {
			t.Fatal(err)
		}
		reads(t, r, 2, 2)
		r.r.Forget()
		if err := list(t, r, other); err != nil {
			t.Fatal(err)
		}
		reads(t, r, 3, 3)
	})
	t.Run("a replaced key is used once its entry expires", func(t *testing.T) {
		r, clk := newLookupRig(t, ttl)
		r.store.keys[aliceOther+"/"+ProviderOpenAI] = []byte("sk-old")
		_ = list(t, r, other)
		r.store.keys[aliceOther+"/"+ProviderOpenAI] = []byte("sk-new") // through another replica
		clk.advance(ttl - time.Millisecond)
		_ = list(t, r, other)
		if r.openai.key != "sk-old" {
			t.Errorf("before the ttl the call used %q, want the remembered sk-old", r.openai.key)
		}
		clk.advance(time.Millisecond)
		_ = list(t, r, other)
		if r.openai.key != "sk-new" {
			t.Errorf("after the ttl the call used %q, want sk-new", r.openai.key)
		}
	})
	t.Run("a deleted key is refused once its entry expires", func(t *testing.T) {
		r, clk := newLookupRig(t, ttl)
		r.store.keys[aliceOther+"/"+ProviderOpenAI] = []byte("sk-other")
		_ = list(t, r, other)
		delete(r.store.keys, aliceOther+"/"+ProviderOpenAI)
		if err := list(t, r, other); err != nil {
			t.Errorf("within the ttl: %v", err)
		}
		clk.advance(ttl)
		if err := list(t, r, other); !errors.Is(err, ErrNoProviderKey) {
			t.Errorf("after the ttl: %v, want ErrNoProviderKey", err)
		}
	})
	t.Run("failures are not remembered", func(t *testing.T) {
		r, _ := newLookupRig(t, ttl)
		if err := list(t, r, other); !errors.Is(err, ErrNoProviderKey) {
			t.Fatalf("no key stored: %v", err)
		}
		r.store.keys[aliceOther+"/"+ProviderOpenAI] = []byte("sk-other")
		if err := list(t, r, other); err != nil {
			t.Errorf("a key stored since: %v", err)
		}
		r.ws.err = errors.New("store down")
		r.r.Forget()
		if err := list(t, r, other); err == nil {
			t.Fatal("the store is down and the workspace was forgotten, yet the list worked")
		}
		r.ws.err = nil
		if err := list(t, r, other); err != nil {
			t.Errorf("the store is back: %v", err)
		}
	})
	t.Run("one entry per calling key", func(t *testing.T) {
		r, _ := newLookupRig(t, ttl)
		r.store.keys[aliceOther+"/"+ProviderOpenAI] = []byte("sk-other")
		mgmt2 := &keys.APIKey{ID: "key-alice-mgmt-2", UserID: "alice", Role: keys.RoleManagement}
		_ = list(t, r, other)
		_ = list(t, r, Target{Key: mgmt2, WorkspaceID: aliceOther, Provider: ProviderOpenAI})
		if len(r.opener.opened) != 2 {
			t.Errorf("opened %v, want one key read per calling key (allowed_api_key_hashes decide per key)", r.opener.opened)
		}
	})
	t.Run("a deleted workspace is refused once forgotten or expired", func(t *testing.T) {
		r, clk := newLookupRig(t, ttl)
		r.store.keys[aliceOther+"/"+ProviderOpenAI] = []byte("sk-other")
		_ = list(t, r, other)
		delete(r.ws.owner, aliceOther)
		if err := list(t, r, other); err != nil {
			t.Errorf("within the ttl: %v", err)
		}
		clk.advance(ttl)
		if err := list(t, r, other); !errors.Is(err, ErrWorkspaceForbidden) {
			t.Errorf("after the ttl: %v, want ErrWorkspaceForbidden", err)
		}
		r.ws.owner[aliceOther] = "alice"
		_ = list(t, r, other)
		delete(r.ws.owner, aliceOther)
		r.r.Forget() // deleted through this replica
		if err := list(t, r, other); !errors.Is(err, ErrWorkspaceForbidden) {
			t.Errorf("after Forget: %v, want ErrWorkspaceForbidden", err)
		}
	})
	t.Run("default workspace remembered", func(t *testing.T) {
		r, _ := newLookupRig(t, ttl)
		for range 2 {
			if err := list(t, r, Target{Key: aliceMgmt, Provider: ProviderOpenAI}); err != nil {
				t.Fatal(err)
			}
		}
		reads(t, r, 1, 1)
	})
	t.Run("without a ttl every request reads the store", func(t *testing.T) {
		r, _ := newLookupRig(t, 0)
		r.store.keys[aliceOther+"/"+ProviderOpenAI] = []byte("sk-other")
		for range 3 {
			_ = list(t, r, other)
		}
		reads(t, r, 3, 3)
		r.r.Forget() // harmless
	})
}

// slugWorkspaces finds every name as a slug: the workspace it answers has
// another id than the one asked for.
type slugWorkspaces struct{ gets int }

func (s *slugWorkspaces) Get(_ context.Context, _, idOrSlug string) (workspace.Workspace, error) {
	s.gets++
	return workspace.Workspace{ID: strings.Repeat("f", 8) + idOrSlug[8:]}, nil
}

func (s *slugWorkspaces) Default(context.Context, string) (workspace.Workspace, error) {
	return workspace.Workspace{}, errors.New("not here")
}

// What a slug names can change (PATCH), so a workspace found by one is not
// remembered; one found by its id is.
func TestCachedWorkspacesKeepOnlyIDs(t *testing.T) {
	clk := &testClock{t: fixedNow}
	ws := &slugWorkspaces{}
	c := cachedWorkspaces{Workspaces: ws, cache: newExpiring[userRef, workspace.Workspace](time.Minute, clk.now)}
	for range 2 {
		if _, err := c.Get(context.Background(), "alice", aliceOther); err != nil {
			t.Fatal(err)
		}
	}
	if ws.gets != 2 {
		t.Errorf("%d lookups, want 2: a workspace found by another name than its id is not remembered", ws.gets)
	}
	if _, err := c.Default(context.Background(), "alice"); err == nil {
		t.Error("Default failed underneath but not through the cache")
	}
}
