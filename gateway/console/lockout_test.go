package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestRightKeySignsInFromABlockedAddress: once an address has failed too
// many sign-ins, its wrong keys keep getting the 429, but a right key still
// signs in from it, and works there afterwards: one wrong script behind a
// NAT does not lock out the people behind it.
func TestRightKeySignsInFromABlockedAddress(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Limits.Rate.AuthFailures.Requests, cfg.Limits.Rate.AuthFailures.Burst = 3, 3
	g := startGateway(t, cfg, true)
	script := g.browser(t)
	var last answer
	for range 5 {
		last = script.post("/console/sign-in", url.Values{"csrf": {script.csrf("/console/sign-in")}, "key": {"sk-wrong"}})
	}
	if last.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("after repeated failures = %d, want 429\n%s", last.StatusCode, last.Body)
	}

	person := g.browser(t) // another browser at the same address
	person.signIn(g.Management)
	if p := person.get("/console/keys"); p.StatusCode != http.StatusOK {
		t.Errorf("the first page after signing in from the blocked address = %d", p.StatusCode)
	}
	if _, err := g.api(t, g.Management).CurrentKey(context.Background()); err != nil {
		t.Errorf("the API with the same right key from that address: %v", err)
	}

	again := script.post("/console/sign-in", url.Values{"csrf": {script.csrf("/console/sign-in")}, "key": {"sk-wrong"}})
	if again.StatusCode != http.StatusTooManyRequests || !strings.Contains(again.Body, "Rate limit exceeded. Try again in ") {
		t.Errorf("a wrong key from the address still blocked = %d, want 429\n%s", again.StatusCode, again.Body)
	}
}
