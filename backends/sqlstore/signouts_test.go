package sqlstore

import (
	"testing"
	"time"
)

// testSignOut: a signed-out session stays signed out (on every replica:
// the record is in the shared store), a second sign-out is harmless, and
// records past their session's expiry are dropped by later sign-outs.
func testSignOut(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	if out, err := s.SignedOut(ctx, "s1"); err != nil || out {
		t.Fatalf("SignedOut before = %v, %v; want false", out, err)
	}
	if err := s.SignOut(ctx, "s1", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.SignOut(ctx, "s1", time.Now().Add(time.Hour)); err != nil {
		t.Fatalf("second sign-out: %v", err)
	}
	if out, err := s.SignedOut(ctx, "s1"); err != nil || !out {
		t.Fatalf("SignedOut after = %v, %v; want true", out, err)
	}
	if err := s.SignOut(ctx, "old", time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.SignOut(ctx, "s2", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if out, err := s.SignedOut(ctx, "old"); err != nil || out {
		t.Errorf("a record past its session's expiry = %v, %v; want dropped", out, err)
	}
	if out, err := s.SignedOut(ctx, "s1"); err != nil || !out {
		t.Errorf("a live record = %v, %v; want kept", out, err)
	}
}
