package files

import (
	"context"
	"sync"
	"time"

	"github.com/aigateway/gateway/workspace"
)

// maxLookups bounds each cache of lookups (ReadConfig.LookupTTL): past it,
// expired entries go first, then everything.
const maxLookups = 100_000

// expiring remembers values for a while, on one replica. Its Forget
// drops everything and also refuses what a reader began to load before it,
// so a value read from the store before a change, and put after the
// change's Forget, is never kept. An entry is trusted for ttl from the
// moment its reader began to load it, so no value is served longer than
// ttl after the store said it. Expired entries are dropped by the puts
// that follow, at most one ttl later (the provider clients hold unsealed
// keys: they are not kept for workspaces no longer called). It is safe for
// concurrent use.
type expiring[K comparable, V any] struct {
	ttl      time.Duration
	now      func() time.Time
	maxItems int

	mu      sync.RWMutex
	gen     uint64 // counts Forget calls
	entries map[K]entry[V]
	swept   time.Time // when expired entries were last dropped
}

type entry[V any] struct {
	v       V
	expires time.Time
}

// ticket is what get hands to put: when the loading began, and the
// generation it began in.
type ticket struct {
	at  time.Time
	gen uint64
}

func newExpiring[K comparable, V any](ttl time.Duration, now func() time.Time) *expiring[K, V] {
	return &expiring[K, V]{ttl: ttl, now: now, maxItems: maxLookups, entries: make(map[K]entry[V])}
}

// get returns k's value while it is fresh; otherwise the ticket to put the
// value the caller loads now.
func (c *expiring[K, V]) get(k K) (V, bool, ticket) {
	now := c.now()
	c.mu.RLock()
	e, hit := c.entries[k]
	gen := c.gen
	c.mu.RUnlock()
	if hit && now.Before(e.expires) {
		return e.v, true, ticket{}
	}
	var zero V
	return zero, false, ticket{at: now, gen: gen}
}

// put keeps v for k, unless Forget was called since t was issued.
func (c *expiring[K, V]) put(k K, v V, t ticket) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.gen != c.gen {
		return
	}
	if len(c.entries) >= c.maxItems || t.at.Sub(c.swept) >= c.ttl {
		c.swept = t.at
		for key, e := range c.entries {
			if !t.at.Before(e.expires) {
				delete(c.entries, key)
			}
		}
		if len(c.entries) >= c.maxItems {
			clear(c.entries)
		}
	}
	c.entries[k] = entry[V]{v: v, expires: t.at.Add(c.ttl)}
}

// forget drops every entry, and every value being loaded.
func (c *expiring[K, V]) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.entries)
}

// userRef names a workspace of a user: by id, or "" for the default one.
type userRef struct{ user, id string }

// cachedWorkspaces answers the workspace lookups of file requests from a
// cache. Only answers that cannot change but by a deletion are kept: a
// user's default workspace (never deleted, never renamed) and a workspace
// found by its id (ids never change, nor do owners). What a slug names can
// change, so a workspace found by a slug is not kept; nor is a failure.
type cachedWorkspaces struct {
	Workspaces
	cache *expiring[userRef, workspace.Workspace]
}

func (c cachedWorkspaces) Get(ctx context.Context, userID, idOrSlug string) (workspace.Workspace, error) {
	k := userRef{userID, idOrSlug}
	w, ok, t := c.cache.get(k)
	if ok {
		return w, nil
	}
	w, err := c.Workspaces.Get(ctx, userID, idOrSlug)
	if err == nil && w.ID == idOrSlug {
		c.cache.put(k, w, t)
	}
	return w, err
}

func (c cachedWorkspaces) Default(ctx context.Context, userID string) (workspace.Workspace, error) {
	k := userRef{user: userID}
	w, ok, t := c.cache.get(k)
	if ok {
		return w, nil
	}
	w, err := c.Workspaces.Default(ctx, userID)
	if err == nil {
		c.cache.put(k, w, t)
	}
	return w, err
}

// providerUse names the provider key a request uses: the workspace, the
// provider and the calling key (allowed_api_key_hashes make the choice
// depend on it).
type providerUse struct{ workspace, provider, keyID string }
