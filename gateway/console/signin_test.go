package console_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/aigateway/gateway/gateway/console"
	"github.com/aigateway/gateway/policy/keys"
)

// countWhoami counts the requests of GET /api/v1/key that reach api.
func countWhoami(api http.Handler) (http.Handler, *atomic.Int32) {
	var n atomic.Int32
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/api/v1/key" {
			n.Add(1)
		}
		api.ServeHTTP(w, r)
	}), &n
}

// Signing in asks the API who the key is once: the sign-in's answer is
// carried over its redirects (to /console/, then to the first page), which
// is shown exactly as a page that asked. Every later page asks again.
func TestSignInAsksWhoTheKeyIsOnce(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testConfig(t), true)
	for _, tc := range []struct {
		name, key, first string
	}{
		{"management key", g.Management, "/console/workspaces"},
		{"standard key", g.createKey(t, keys.RoleStandard), "/console/files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api, whoami := countWhoami(g.app.Handler())
			c, err := console.New(console.Options{API: api, SessionKey: []byte("a session key of thirty-two byte")})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(c)
			defer srv.Close()
			b := newVisitor(t, srv.URL)

			b.signIn(tc.key)
			if p := b.get("/console/"); p.StatusCode != http.StatusSeeOther || p.Header.Get("Location") != tc.first {
				t.Fatalf("GET /console/ after sign-in = %d to %q, want 303 to %s", p.StatusCode, p.Header.Get("Location"), tc.first)
			}
			first := b.get(tc.first)
			if first.StatusCode != http.StatusOK {
				t.Fatalf("GET %s after sign-in = %d\n%s", tc.first, first.StatusCode, first.Body)
			}
			if n := whoami.Load(); n != 1 {
				t.Errorf("sign-in to its first page asked GET /key %d times, want once", n)
			}

			again := b.get(tc.first)
			if again.StatusCode != http.StatusOK {
				t.Fatalf("GET %s again = %d", tc.first, again.StatusCode)
			}
			if n := whoami.Load(); n != 2 {
				t.Errorf("after a second page GET /key was asked %d times in all, want 2: every later page asks", n)
			}
			if first.Body != again.Body {
				t.Errorf("the first page, shown from the sign-in's answer, differs from the same page asked again:\n%s\n---\n%s", first.Body, again.Body)
			}
		})
	}
}
