package app

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aigateway/gateway/gateway/console"
	"github.com/aigateway/gateway/internal/audit"
	"github.com/aigateway/gateway/policy/keys"
)

// firstRunTTL is how long the first-run link printed by serve works.
const firstRunTTL = 10 * time.Minute

// FirstRunUser is the user of the management key made on first run: the
// README's first steps make their keys for the same user, so what the
// console shows and what the CLI made meet.
const FirstRunUser = "admin"

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
				// The link is for an empty gateway: once a key exists
				// (made with the CLI while the link was open), it mints
				// nothing.
				if exists, err := a.rt.store.AnyKey(ctx); err != nil || exists {
					return "", cmp.Or(err, console.ErrFirstRunOver)
				}
				// The link's use is recorded before the key is made, so a
				// use that leaves no trace mints nothing (and the link
				// can be tried again). Both entries are the first user's,
				// with the browser (ctx's actor) as the acting side.
				actor := audit.ActorFrom(ctx)
				actor.UserID = FirstRunUser
				ctx = audit.WithActor(ctx, actor)
				if err := a.rt.store.RecordAudit(ctx, audit.Entry{Actor: actor, Action: audit.FirstRunUse, Target: FirstRunUser}); err != nil {
					return "", err
				}
				token, _, err := a.rt.CreateKey(ctx, keys.NewKeyRequest{Name: "first management key (console)", User: FirstRunUser, Role: keys.RoleManagement})
				return token, err
			})
		}
	}
	c, err := console.New(console.Options{
		API: api, SessionKey: sessionKey, TrustedProxies: cfg.Server.TrustedPrefixes(),
		SessionTTL: cfg.Console.SessionTTL, FirstRun: firstRun, Log: slogOf(a.rt.Log), SignOuts: a.rt.store,
		MaxFileBytes: int64(cfg.Limits.MaxFileBytes), Audit: a.rt.store, ClientAddr: a.api.ClientAddr,
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
	return browserBase(addr) + console.Prefix + "first-run?token=" + a.firstRun.Token()
}

// Welcome is the line serve prints once it listens on addr: where the
// console is, or, with the console off, where the API is.
func (a *App) Welcome(addr string) string {
	if a.console == nil {
		return "Gateway API: " + browserBase(addr) + "/api/v1 (the console is off: console.enabled)"
	}
	return "Gateway console: " + browserBase(addr) + console.Prefix
}

// browserBase is the http:// origin a person on this machine opens to reach
// a listener on addr: an unspecified host (0.0.0.0, ::) is localhost.
func browserBase(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// withConsole sends /console/ to the console and everything else to api
// untouched, so the API's routes, and its figures, are what they are
// without it. A browser that opens the gateway's root is sent to the
// console (API clients, which ask for JSON, keep the API's 404), and the
// icon every browser asks for is answered with nothing rather than a JSON
// error on every page view.
func withConsole(api, c http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/console":
			http.Redirect(w, r, console.Prefix, http.StatusMovedPermanently)
		case strings.HasPrefix(r.URL.Path, console.Prefix):
			c.ServeHTTP(w, r)
		case r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead) && wantsHTML(r):
			http.Redirect(w, r, console.Prefix, http.StatusSeeOther)
		case r.URL.Path == "/favicon.ico" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
			w.Header().Set("Cache-Control", "public, max-age=86400")
			w.WriteHeader(http.StatusNoContent)
		default:
			api.ServeHTTP(w, r)
		}
	})
}

// wantsHTML reports whether r is a browser's navigation: its Accept names
// text/html before any JSON type (browsers send it first; API clients
// never do) and does not refuse it with q=0.
func wantsHTML(r *http.Request) bool {
	for _, accept := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(accept, ",") {
			mediaType, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			mediaType = strings.ToLower(strings.TrimSpace(mediaType))
			if mediaType == "application/json" || strings.HasSuffix(mediaType, "+json") {
				return false
			}
			if mediaType == "text/html" {
				return !refused(params)
			}
		}
	}
	return false
}

// refused reports whether the parameters of an Accept entry hold q=0.
func refused(params string) bool {
	for p := range strings.SplitSeq(params, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(p), "=")
		if strings.EqualFold(strings.TrimSpace(name), "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			return err == nil && q == 0
		}
	}
	return false
}
