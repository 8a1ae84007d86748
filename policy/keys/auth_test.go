package keys

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingStore serves keys from a map and counts lookups.
type countingStore struct {
	keys  map[string]APIKey
	calls atomic.Int64
	err   error
}

func (s *countingStore) EnsureUser(context.Context, string) error { return nil }
func (s *countingStore) CreateKey(_ context.Context, k APIKey) error {
	s.keys[k.ID] = k
	return nil
}
func (s *countingStore) KeyByID(_ context.Context, id string) (APIKey, error) {
	s.calls.Add(1)
	if s.err != nil {
		return APIKey{}, s.err
	}
	k, ok := s.keys[id]
	if !ok {
		return APIKey{}, ErrKeyNotFound
	}
	return k, nil
}

func TestNewKeyFormat(t *testing.T) {
	token, k, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(token, KeyPrefix) {
		t.Fatalf("token %q lacks the %q prefix", token, KeyPrefix)
	}
	id, ok := ParseToken(token)
	if !ok || id != k.ID {
		t.Fatalf("ParseToken(%q) = %q, %v; want %q", token, id, ok, k.ID)
	}
	if !k.Matches(token) || k.Matches(token+"x") || k.Matches(strings.Replace(token, ".", ".A", 1)) {
		t.Fatal("Matches accepts only the exact token")
	}
	other, _, _ := NewKey()
	if other == token {
		t.Fatal("two keys are equal")
	}
}

func TestParseTokenRefusesMalformed(t *testing.T) {
	token, _, _ := NewKey()
	for _, bad := range []string{
		"", "sk-gw-", "sk-gw-abc.def", strings.TrimPrefix(token, KeyPrefix), "sk-xx-" + token[6:],
		strings.Replace(token, ".", "", 1), strings.ToUpper(token), token + strings.Repeat("a", 100),
		KeyPrefix + "zzzzzzzzzzzzzzzz" + token[len(KeyPrefix)+16:],
	} {
		if _, ok := ParseToken(bad); ok {
			t.Errorf("ParseToken(%q) accepted a malformed token", bad)
		}
	}
}

func TestAuthenticate(t *testing.T) {
	store := &countingStore{keys: map[string]APIKey{}}
	good, k, _ := NewKey()
	k.UserID, k.Role = "u1", RoleStandard
	store.keys[k.ID] = k
	disabledToken, d, _ := NewKey()
	d.UserID, d.Role, d.Disabled = "u1", RoleStandard, true
	store.keys[d.ID] = d
	unknown, _, _ := NewKey()
	forged := good[:len(good)-1] + "A"
	if forged == good {
		forged = good[:len(good)-1] + "B"
	}
	a := NewAuthenticator(store, time.Minute)

	tests := []struct {
		name, header string
		want         error
	}{
		{"valid", "Bearer " + good, nil},
		{"scheme is case-insensitive", "bearer " + good, nil},
		{"missing", "", ErrUnauthenticated},
		{"wrong scheme", "Basic " + good, ErrInvalidKey},
		{"no token", "Bearer ", ErrInvalidKey},
		{"malformed", "Bearer sk-gw-nope", ErrInvalidKey},
		{"unknown", "Bearer " + unknown, ErrInvalidKey},
		{"disabled", "Bearer " + disabledToken, ErrInvalidKey},
		{"right id, wrong secret", "Bearer " + forged, ErrInvalidKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := a.Authenticate(context.Background(), tt.header)
			if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Fatalf("Authenticate(%q) error = %v, want %v", tt.header, err, tt.want)
			}
			if tt.want == nil && (got == nil || got.ID != k.ID) {
				t.Fatalf("Authenticate returned %+v, want key %s", got, k.ID)
			}
		})
	}
}

func TestAuthenticateCachesBothOutcomes(t *testing.T) {
	store := &countingStore{keys: map[string]APIKey{}}
	good, k, _ := NewKey()
	store.keys[k.ID] = k
	unknown, _, _ := NewKey()
	now := time.Unix(1000, 0)
	a := NewAuthenticator(store, 10*time.Second)
	a.now = func() time.Time { return now }
	for i := 0; i < 5; i++ {
		if _, err := a.Authenticate(context.Background(), "Bearer "+good); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Authenticate(context.Background(), "Bearer "+unknown); !errors.Is(err, ErrInvalidKey) {
			t.Fatal(err)
		}
	}
	if got := store.calls.Load(); got != 2 {
		t.Fatalf("store asked %d times, want 2 (one per token)", got)
	}
	// Disabling takes effect once the cache entry expires.
	k.Disabled = true
	store.keys[k.ID] = k
	now = now.Add(11 * time.Second)
	if _, err := a.Authenticate(context.Background(), "Bearer "+good); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("disabled key still accepted after the cache TTL: %v", err)
	}
}

// TestAuthenticateCached decides from the cache alone: a key it does not
// hold (or holds past its TTL or the revocation bound) is ErrNotCached,
// never a store read; one it holds is decided as Authenticate decides.
func TestAuthenticateCached(t *testing.T) {
	store := &countingStore{keys: map[string]APIKey{}}
	good, k, _ := NewKey()
	store.keys[k.ID] = k
	unknown, _, _ := NewKey()
	wrongSecret := strings.SplitN(good, ".", 2)[0] + "." + strings.SplitN(unknown, ".", 2)[1]
	now := time.Unix(1000, 0)
	a := NewAuthenticator(store, 10*time.Second)
	a.now = func() time.Time { return now }
	ctx := context.Background()
	for _, token := range []string{good, unknown, wrongSecret} {
		if _, err := a.AuthenticateCached(ctx, "Bearer "+token); !errors.Is(err, ErrNotCached) {
			t.Errorf("before any lookup: %v, want ErrNotCached", err)
		}
	}
	if store.calls.Load() != 0 {
		t.Fatalf("AuthenticateCached read the store %d times", store.calls.Load())
	}
	for _, tc := range []struct {
		header string
		want   error
	}{{"", ErrUnauthenticated}, {"Basic x", ErrInvalidKey}, {"Bearer not-a-key", ErrInvalidKey}} {
		if _, err := a.AuthenticateCached(ctx, tc.header); !errors.Is(err, tc.want) {
			t.Errorf("%q: %v, want %v (no store needed to tell)", tc.header, err, tc.want)
		}
	}
	_, _ = a.Authenticate(ctx, "Bearer "+good)
	_, _ = a.Authenticate(ctx, "Bearer "+unknown)
	if got, err := a.AuthenticateCached(ctx, "Bearer "+good); err != nil || got.ID != k.ID {
		t.Errorf("a cached right key: %v, %v", got, err)
	}
	for _, token := range []string{unknown, wrongSecret} {
		if _, err := a.AuthenticateCached(ctx, "Bearer "+token); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("a wrong key whose id the cache knows: %v, want ErrInvalidKey", err)
		}
	}
	a.SetRevocationBound(4 * time.Second)
	now = now.Add(5 * time.Second)
	if _, err := a.AuthenticateCached(ctx, "Bearer "+good); !errors.Is(err, ErrNotCached) {
		t.Errorf("a verdict past the revocation bound: %v, want ErrNotCached", err)
	}
	if store.calls.Load() != 2 {
		t.Errorf("store read %d times, want the 2 of Authenticate", store.calls.Load())
	}
}

func TestAuthenticateStoreErrorIsNotA401(t *testing.T) {
	store := &countingStore{keys: map[string]APIKey{}, err: errors.New("database is down")}
	token, _, _ := NewKey()
	a := NewAuthenticator(store, time.Minute)
	_, err := a.Authenticate(context.Background(), "Bearer "+token)
	if err == nil || errors.Is(err, ErrInvalidKey) || errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("a store failure must not read as a bad key: %v", err)
	}
	store.err = nil
	store.keys = map[string]APIKey{}
	// The failure was not cached as "unknown".
	if _, err := a.Authenticate(context.Background(), "Bearer "+token); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("after recovery: %v", err)
	}
	if store.calls.Load() != 2 {
		t.Fatalf("store calls = %d, want 2", store.calls.Load())
	}
}

func TestAllowsModel(t *testing.T) {
	open := APIKey{}
	if !open.AllowsModel("any/model") {
		t.Error("a key without an allowlist must allow every model")
	}
	limited := APIKey{Models: []string{"a/b"}}
	if !limited.AllowsModel("a/b") || limited.AllowsModel("a/c") {
		t.Error("allowlist not applied")
	}
	none := APIKey{Models: []string{}}
	if none.AllowsModel("a/b") {
		t.Error("an empty allowlist allows nothing")
	}
}

// AuthenticateAt decides as of the time it is given, not the clock's: a
// key expiring between two such times passes at the first and not at the
// second, cached or not.
func TestAuthenticateAtDecidesAsOfItsTime(t *testing.T) {
	store := &countingStore{keys: map[string]APIKey{}}
	token, k, _ := NewKey()
	expires := time.Now().Add(time.Hour)
	k.UserID, k.Role, k.ExpiresAt = "u1", RoleStandard, &expires
	store.keys[k.ID] = k
	a := NewAuthenticator(store, time.Minute)
	ctx := context.Background()
	if _, err := a.AuthenticateAt(ctx, "Bearer "+token, expires.Add(-time.Second)); err != nil {
		t.Fatalf("a second before it expires: %v", err)
	}
	if _, err := a.AuthenticateAt(ctx, "Bearer "+token, expires.Add(time.Second)); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("a second after it expires = %v, want ErrInvalidKey", err)
	}
	if _, err := a.Authenticate(ctx, "Bearer "+token); err != nil {
		t.Fatalf("Authenticate now, an hour before it expires: %v", err)
	}
}
