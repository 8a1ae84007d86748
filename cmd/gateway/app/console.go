package app

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/aigateway/gateway/gateway/console"
	"github.com/aigateway/gateway/policy/keys"
)

// firstRunTTL is how long the first-run link printed by serve works.
const firstRunTTL = 10 * time.Minute

// firstRunUser is the user of the management key made on first run.
const firstRunUser = "admin"

// buildConsole makes the console over api, when the configuration turns it
// on. Its sessions are sealed with a key derived from the sealing key, so
// every replica given that key accepts every session.
func (a *App) buildConsole(ctx context.Context, api http.Handler, sealingKey []byte) error {
	cfg := a.rt.Config
	if !cfg.Console.Enabled {
		return nil
	}
	sessionKey, err := console.DeriveSessionKey(sealingKey)
	if err != nil {
		return err
	}
	var firstRun *console.FirstRun
	// Only the embedded default starts empty on one machine whose operator
	// reads serve's output; a shared database gets its first key from the
	// CLI, and no link is ever offered once a key exists.
	if cfg.Metadata.Driver == "sqlite" {
		any, err := a.rt.store.AnyKey(ctx)
		if err != nil {
			return fmt.Errorf("console: %w", err)
		}
		if !any {
			firstRun = console.NewFirstRun(firstRunTTL, func(ctx context.Context) (string, error) {
				token, _, err := a.rt.CreateKey(ctx, keys.NewKeyRequest{Name: "first management key (console)", User: firstRunUser, Role: keys.RoleManagement})
				return token, err
			})
		}
	}
	c, err := console.New(console.Options{
		API: api, SessionKey: sessionKey, TrustedProxies: cfg.Server.TrustedPrefixes(),
		SessionTTL: cfg.Console.SessionTTL, FirstRun: firstRun, Log: slogOf(a.rt.Log), SignOuts: a.rt.store,
	})
	if err != nil {
		return err
	}
	a.console, a.firstRun = c, firstRun
	return nil
}

// FirstRunLink is the console's one-time sign-in link for a gateway
// listening on addr, or "" when there is none (the console is off, the
// store is not the embedded default, or a key exists).
func (a *App) FirstRunLink(addr string) string {
	if a.firstRun == nil {
		return ""
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + console.Prefix + "first-run?token=" + a.firstRun.Token()
}

// withConsole sends /console/ to the console and everything else to api
// untouched, so the API's routes, and its figures, are what they are
// without it.
func withConsole(api, c http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, console.Prefix) || r.URL.Path == "/console" {
			if r.URL.Path == "/console" {
				http.Redirect(w, r, console.Prefix, http.StatusMovedPermanently)
				return
			}
			c.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}
