package keys

import (
	"context"
	"errors"
	"testing"
	"time"
)

// logStore is a change log and a key store in memory.
type logStore struct {
	countingStore
	changes []Change
	fail    error
}

func (s *logStore) KeyChangesSince(_ context.Context, since time.Time) ([]Change, error) {
	if s.fail != nil {
		return nil, s.fail
	}
	var out []Change
	for _, c := range s.changes {
		if !c.At.Before(since) {
			out = append(out, c)
		}
	}
	return out, nil
}

func TestRevokerForgetsChangedKeys(t *testing.T) {
	token, k, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	k.Role = RoleStandard
	st := &logStore{countingStore: countingStore{keys: map[string]APIKey{k.ID: k}}}
	clock := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	auth := NewAuthenticator(st, time.Hour)
	auth.now = func() time.Time { return clock }
	rev := &Revoker{Log: st, Auth: auth, Margin: 30 * time.Second, now: func() time.Time { return clock }}

	if _, err := auth.Authenticate(context.Background(), "Bearer "+token); err != nil {
		t.Fatal(err)
	}
	if err := rev.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}

	// Another replica disables the key; the entry is stamped before this
	// replica's last poll (it committed late), yet inside the margin.
	k.Disabled = true
	st.keys[k.ID] = k
	st.changes = append(st.changes, Change{Seq: 1, KeyID: k.ID, At: clock.Add(-5 * time.Second)})
	if _, err := auth.Authenticate(context.Background(), "Bearer "+token); err != nil {
		t.Fatalf("before the poll the cached verdict stands: %v", err)
	}
	clock = clock.Add(time.Second)
	if err := rev.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.Authenticate(context.Background(), "Bearer "+token); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("disabled key accepted after the poll: %v", err)
	}

	// Applied entries are not applied again: re-enabling through the cache
	// path stays cached until a new entry says otherwise.
	calls := st.calls.Load()
	clock = clock.Add(time.Second)
	if err := rev.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, _ = auth.Authenticate(context.Background(), "Bearer "+token)
	if got := st.calls.Load(); got != calls {
		t.Fatalf("an entry already applied made the cache forget again (%d store calls, want %d)", got, calls)
	}
}

func TestRevokerCatchesUpAfterFailedPolls(t *testing.T) {
	token, k, _ := NewKey()
	st := &logStore{countingStore: countingStore{keys: map[string]APIKey{k.ID: k}}}
	clock := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	auth := NewAuthenticator(st, time.Hour)
	auth.now = func() time.Time { return clock }
	rev := &Revoker{Log: st, Auth: auth, Margin: 30 * time.Second, now: func() time.Time { return clock }}
	if err := rev.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.Authenticate(context.Background(), "Bearer "+token); err != nil {
		t.Fatal(err)
	}

	// The database is out of reach for a minute while the key is deleted.
	st.fail = errors.New("connection refused")
	delete(st.keys, k.ID)
	st.changes = append(st.changes, Change{Seq: 7, KeyID: k.ID, At: clock.Add(10 * time.Second)})
	for range 60 {
		clock = clock.Add(time.Second)
		if err := rev.Poll(context.Background()); err == nil {
			t.Fatal("poll succeeded against a failing log")
		}
	}
	st.fail = nil
	clock = clock.Add(time.Second)
	if err := rev.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.Authenticate(context.Background(), "Bearer "+token); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("deleted key accepted after the log came back: %v", err)
	}
}

func TestExpiredKeyRefusedFromCache(t *testing.T) {
	token, k, _ := NewKey()
	clock := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	exp := clock.Add(time.Minute)
	k.ExpiresAt = &exp
	st := &countingStore{keys: map[string]APIKey{k.ID: k}}
	auth := NewAuthenticator(st, time.Hour)
	auth.now = func() time.Time { return clock }
	if _, err := auth.Authenticate(context.Background(), "Bearer "+token); err != nil {
		t.Fatal(err)
	}
	clock = exp
	if _, err := auth.Authenticate(context.Background(), "Bearer "+token); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("key accepted at its expiry: %v", err)
	}
	if got := st.calls.Load(); got != 1 {
		t.Fatalf("expiry needed %d store calls, want 1 (the cache decides)", got)
	}
}

func TestWrongSecretOfKnownIDRefused(t *testing.T) {
	token, k, _ := NewKey()
	st := &countingStore{keys: map[string]APIKey{k.ID: k}}
	auth := NewAuthenticator(st, time.Hour)
	if _, err := auth.Authenticate(context.Background(), "Bearer "+token); err != nil {
		t.Fatal(err)
	}
	forged := token[:len(token)-1] + map[bool]string{true: "A", false: "B"}[token[len(token)-1] != 'A']
	if _, err := auth.Authenticate(context.Background(), "Bearer "+forged); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("a wrong secret with a known id was accepted: %v", err)
	}
}

// TestRevocationBoundWhileTheLogIsUnreadable: a key revoked just as the
// database becomes unreachable is not served from the cache past the
// revocation bound. While the change log is read, the cache is trusted
// for its whole TTL; once the last successful read is older than the bound,
// every key goes back to the store, whose failure is not a 401 but an error
// (the edge answers 503), and a fresh answer of the store is trusted again.
func TestRevocationBoundWhileTheLogIsUnreadable(t *testing.T) {
	ctx := context.Background()
	token, k, _ := NewKey()
	st := &logStore{countingStore: countingStore{keys: map[string]APIKey{k.ID: k}}}
	clock := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	auth := NewAuthenticator(st, 10*time.Second)
	auth.SetRevocationBound(4 * time.Second)
	auth.now = func() time.Time { return clock }
	rev := &Revoker{Log: st, Auth: auth, Margin: 30 * time.Second, now: func() time.Time { return clock }}

	if _, err := auth.Authenticate(ctx, "Bearer "+token); err != nil {
		t.Fatal(err)
	}
	// Healthy: the log is read every second, the cache serves past the
	// bound.
	for range 5 {
		clock = clock.Add(time.Second)
		if err := rev.Poll(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := auth.Authenticate(ctx, "Bearer "+token); err != nil {
			t.Fatal(err)
		}
	}
	if n := st.calls.Load(); n != 1 {
		t.Fatalf("%d store reads while the log was read, want 1 (the cache serves)", n)
	}

	// The key is disabled, and the database goes down before this
	// replica's next poll: the cached verdict is its only view.
	k.Disabled = true
	st.keys[k.ID] = k
	st.changes = append(st.changes, Change{Seq: 1, KeyID: k.ID, At: clock})
	st.fail, st.err = errors.New("connection refused"), errors.New("connection refused")
	revoked := clock
	for clock.Sub(revoked) < 10*time.Second {
		clock = clock.Add(500 * time.Millisecond)
		if err := rev.Poll(ctx); err == nil {
			t.Fatal("a poll succeeded against an unreachable log")
		}
		_, err := auth.Authenticate(ctx, "Bearer "+token)
		// The last successful poll began with the revocation, so the bound
		// of 4 s ends trust 4 s after it; the cached verdict itself would
		// have been served until its TTL ran out, 5 s later.
		if clock.Sub(revoked) >= 4*time.Second && err == nil {
			t.Fatalf("the revoked key was served %v after the revocation, from a cache the log could not refresh", clock.Sub(revoked))
		}
		if err != nil && errors.Is(err, ErrInvalidKey) {
			t.Fatalf("an unreachable store made a 401: %v", err)
		}
	}

	// The database is back: the store's answer is trusted again, and it
	// says the key is disabled.
	st.fail, st.err = nil, nil
	if _, err := auth.Authenticate(ctx, "Bearer "+token); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("after the outage: %v, want ErrInvalidKey", err)
	}
}

// TestRevocationBoundTrustsFreshReads: without any poll of the log, a
// verdict read from the store is trusted for the bound, then read again.
func TestRevocationBoundTrustsFreshReads(t *testing.T) {
	token, k, _ := NewKey()
	st := &countingStore{keys: map[string]APIKey{k.ID: k}}
	clock := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	auth := NewAuthenticator(st, time.Minute)
	auth.SetRevocationBound(4 * time.Second)
	auth.now = func() time.Time { return clock }
	for range 8 {
		if _, err := auth.Authenticate(context.Background(), "Bearer "+token); err != nil {
			t.Fatal(err)
		}
		clock = clock.Add(time.Second)
	}
	if n := st.calls.Load(); n != 2 {
		t.Errorf("%d store reads over 8 s with a bound of 4 s and no log, want 2", n)
	}
	// An older read of the log does not move the bound back.
	auth.ChangeLogRead(clock)
	auth.ChangeLogRead(clock.Add(-time.Hour))
	calls := st.calls.Load()
	clock = clock.Add(3 * time.Second)
	if _, err := auth.Authenticate(context.Background(), "Bearer "+token); err != nil || st.calls.Load() != calls {
		t.Errorf("a verdict current by the log was read again (%v, %d reads)", err, st.calls.Load()-calls)
	}
}
