package keys

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"strings"
	"sync"
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
type Authenticator struct {
	store    KeyStore
	ttl      time.Duration
	maxItems int
	now      func() time.Time

	mu    sync.RWMutex
	cache map[string]cachedKey
}

type cachedKey struct {
	key     *APIKey // nil: the id names no key
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

// Authenticate checks an Authorization header value. It returns
// ErrUnauthenticated when the header is empty and ErrInvalidKey for a wrong
// scheme or any token that does not name an enabled, unexpired key. Other
// errors come from the store (it could not decide).
func (a *Authenticator) Authenticate(ctx context.Context, header string) (*APIKey, error) {
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
	now := a.now()

	a.mu.RLock()
	c, hit := a.cache[id]
	a.mu.RUnlock()
	if hit && now.Before(c.expires) {
		return admit(c.key, &sum, now)
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
	a.cache[id] = cachedKey{key: k, expires: now.Add(a.ttl)}
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
