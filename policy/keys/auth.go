package keys

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Authenticator turns an Authorization header into the caller's key.
//
// Verified keys are cached in-process by their public id for cacheTTL, so
// the hot path of a lookup costs one hash and a map read instead of a
// database round trip. A change that revokes a key (disable, delete) reaches
// the cache through Forget, which a Revoker calls for every change it reads
// from the store's change log, within seconds on every replica; cacheTTL
// only bounds how long a change the log lost could linger. Expiry needs no
// message: the cached key carries its expires_at. Unknown ids are cached the
// same way, so a flood of garbage tokens cannot become a flood of queries.
//
// With a revocation bound (SetRevocationBound), a cached verdict is trusted
// only while it is known to be current: while either the verdict itself or
// the last successful read of the change log (ChangeLogRead) is younger
// than the bound. A replica that cannot read the change log (the database
// is down) goes back to the store for every key once the bound has passed,
// so a key revoked just before the outage is not served past the bound
// from a stale cache: its requests fail (503) until the store answers.
type Authenticator struct {
	store    KeyStore
	ttl      time.Duration
	maxItems int
	now      func() time.Time
	// bound is the revocation bound in nanoseconds (0: none); changeLog
	// is when the last successful read of the change log began, in Unix
	// nanoseconds.
	bound     atomic.Int64
	changeLog atomic.Int64

	mu    sync.RWMutex
	cache map[string]cachedKey
}

type cachedKey struct {
	key     *APIKey // nil: the id names no key
	read    time.Time
	expires time.Time
}

// NewAuthenticator returns an Authenticator reading keys from store.
func NewAuthenticator(store KeyStore, cacheTTL time.Duration) *Authenticator {
	return &Authenticator{
		store:    store,
		ttl:      cacheTTL,
		maxItems: 100_000,
		now:      time.Now,
		cache:    make(map[string]cachedKey),
	}
}

// ErrNotCached: AuthenticateCached has no current verdict on the key; only
// the store could decide.
var ErrNotCached = errors.New("keys: no current cached verdict on this key")

// Authenticate checks an Authorization header value. It returns
// ErrUnauthenticated when the header is empty and ErrInvalidKey for a wrong
// scheme or any token that does not name an enabled, unexpired key. Other
// errors come from the store (it could not decide).
func (a *Authenticator) Authenticate(ctx context.Context, header string) (*APIKey, error) {
	return a.authenticate(ctx, header, true, a.now())
}

// AuthenticateAt is Authenticate deciding as of now, a time the caller
// has read already (a server, when its request began): the lookup path
// reads the clock once per request rather than once per component.
func (a *Authenticator) AuthenticateAt(ctx context.Context, header string, now time.Time) (*APIKey, error) {
	return a.authenticate(ctx, header, true, now)
}

// AuthenticateCached is Authenticate without the store: it decides from
// the verdicts the cache holds (and may trust, under the revocation bound)
// and returns ErrNotCached for a well-formed token whose verdict would need
// a store read. It costs a hash and a map read, and never a query, so the
// edge can answer callers it will not spend a query on.
func (a *Authenticator) AuthenticateCached(ctx context.Context, header string) (*APIKey, error) {
	return a.authenticate(ctx, header, false, a.now())
}

// authenticate is Authenticate; without store, a verdict the cache does
// not hold is ErrNotCached.
func (a *Authenticator) authenticate(ctx context.Context, header string, store bool, now time.Time) (*APIKey, error) {
	if header == "" {
		return nil, ErrUnauthenticated
	}
	token, ok := bearerToken(header)
	if !ok {
		return nil, ErrInvalidKey
	}
	id, ok := ParseToken(token)
	if !ok {
		return nil, ErrInvalidKey
	}
	sum := tokenSum(token)

	a.mu.RLock()
	c, hit := a.cache[id]
	a.mu.RUnlock()
	if hit && now.Before(c.expires) && a.current(c, now) {
		return admit(c.key, &sum, now)
	}
	if !store {
		return nil, ErrNotCached
	}

	k, err := a.store.KeyByID(ctx, id)
	switch {
	case errors.Is(err, ErrKeyNotFound):
		a.remember(id, nil, now)
		return nil, ErrInvalidKey
	case err != nil:
		return nil, err
	}
	a.remember(id, &k, now)
	return admit(&k, &sum, now)
}

// SetRevocationBound makes cached verdicts trusted only while they or the
// last successful read of the change log are younger than bound (see
// Authenticator). Zero turns the bound off. Choose it below the promise
// made to users for revocations, with room for one poll of the change log.
func (a *Authenticator) SetRevocationBound(bound time.Duration) {
	a.bound.Store(int64(bound))
}

// ChangeLogRead tells the Authenticator that a read of the change log that
// began at at succeeded and its changes were forgotten: every verdict
// cached before at is as current as at.
func (a *Authenticator) ChangeLogRead(at time.Time) {
	ns := at.UnixNano()
	for {
		old := a.changeLog.Load()
		if ns <= old || a.changeLog.CompareAndSwap(old, ns) {
			return
		}
	}
}

// current reports whether the verdict c may be trusted at now under the
// revocation bound.
func (a *Authenticator) current(c cachedKey, now time.Time) bool {
	bound := a.bound.Load()
	if bound == 0 {
		return true
	}
	oldest := now.UnixNano() - bound
	return c.read.UnixNano() > oldest || a.changeLog.Load() > oldest
}

// admit decides on a key found for the token's id: the token must be its
// secret (compared in constant time) and the key enabled and unexpired.
func admit(k *APIKey, sum *[sha256.Size]byte, now time.Time) (*APIKey, error) {
	if k == nil || k.Disabled || k.Expired(now) || subtle.ConstantTimeCompare(sum[:], k.Hash[:]) != 1 {
		return nil, ErrInvalidKey
	}
	return k, nil
}

// Forget drops the cached verdicts on the keys ids, so their next
// authentication reads the store.
func (a *Authenticator) Forget(ids ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, id := range ids {
		delete(a.cache, id)
	}
}

func (a *Authenticator) remember(id string, k *APIKey, now time.Time) {
	if a.ttl <= 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.cache) >= a.maxItems {
		// Expired entries first; if the cache is full of live ones, start
		// over rather than grow without bound.
		for s, c := range a.cache {
			if !now.Before(c.expires) {
				delete(a.cache, s)
			}
		}
		if len(a.cache) >= a.maxItems {
			clear(a.cache)
		}
	}
	a.cache[id] = cachedKey{key: k, read: now, expires: now.Add(a.ttl)}
}

// bearerToken extracts the token of a "Bearer <token>" header; the scheme is
// case-insensitive as RFC 9110 says.
func bearerToken(header string) (string, bool) {
	const scheme = "bearer "
	if len(header) <= len(scheme) || !strings.EqualFold(header[:len(scheme)], scheme) {
		return "", false
	}
	token := strings.TrimSpace(header[len(scheme):])
	return token, token != ""
}

// tokenSum is the SHA-256 of token. Tokens of ordinary length are copied to
// the stack first: the conversion []byte(token) would allocate on every
// authenticated request.
func tokenSum(token string) [sha256.Size]byte {
	var buf [128]byte
	if len(token) <= len(buf) {
		return sha256.Sum256(append(buf[:0], token...))
	}
	return sha256.Sum256([]byte(token))
}
