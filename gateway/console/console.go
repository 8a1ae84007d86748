// Package console is the gateway's console in the browser, served under
// /console/: workspaces, keys, spend, budgets, provider keys, files and models,
// for the people who own them.
//
// It is built on the public HTTP API only. Every page calls the API in
// process through the API's own http.Handler, with the signed-in key as
// its bearer token and the browser's address as its client, so the same
// routes, rules, limits and error messages apply as for any other client,
// and there is no second way into the stores to keep in step.
//
// A session is the API key itself, sealed (AES-GCM) into an HttpOnly,
// SameSite=Strict cookie that only this server can open; page scripts and
// browser storage never see it. Because every page load asks the API with
// that key, a key that is revoked, disabled or deleted ends its sessions at
// the next click (the API answers 401).
//
// Pages are html/template (contextual escaping: every name a user chose is
// shown as text) with one stylesheet and one script, embedded and
// fingerprinted; a strict Content-Security-Policy forbids inline script and
// style. Every POST must come from the console's own pages: browsers' fetch
// metadata and Origin are checked (cross-origin: 403), and the form must
// carry the session's CSRF token.
package console

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/aigateway/gateway/internal/audit"
)

// Options are what the console needs from the gateway.
type Options struct {
	// API is the API's handler (the whole surface, /api/v1 and the rest):
	// every page calls it in process.
	API http.Handler
	// SessionKey seals the session cookies: 32 bytes, the same on every
	// replica (see DeriveSessionKey).
	SessionKey []byte
	// TrustedProxies are the proxies whose X-Forwarded-Proto is believed
	// when deciding whether cookies are Secure (as the API believes their
	// X-Forwarded-For).
	TrustedProxies []netip.Prefix
	// SessionTTL bounds a session's life; zero means 12 hours. The key's own
	// revocation ends it sooner.
	SessionTTL time.Duration
	// FirstRun, when set, lets one visitor with its token create the first
	// management key (see NewFirstRun).
	FirstRun *FirstRun
	// Log receives the console's own failures (never a key).
	Log *slog.Logger
	// SignOuts records signed-out sessions where every replica reads them,
	// so a copy of a signed-out cookie opens nothing. Nil: signing out only
	// clears the browser's cookie.
	SignOuts SignOuts
	// MaxFileBytes is the API's limits.max_file_bytes: the Files page sends
	// a larger file in parts. Zero means DefaultMaxFileBytes, the API's
	// default.
	MaxFileBytes int64
	// UploadPartBytes is the size of the parts the Files page sends, at
	// most the API's largest part. Zero means DefaultUploadPartBytes.
	UploadPartBytes int64
	// Audit records the sign-ins, before their sessions are issued: a
	// sign-in that cannot be recorded does not happen. Nil: sign-ins are
	// not recorded (a console tested alone).
	Audit AuditRecorder
	// ClientAddr is the browser's address as the API's access log names
	// it (behind trusted proxies, the first untrusted hop), for the
	// console's own audit entries. Nil: the peer's address.
	ClientAddr func(*http.Request) string
}

// AuditRecorder writes an audit entry on its own (the metadata store).
type AuditRecorder interface {
	RecordAudit(ctx context.Context, e audit.Entry) error
}

// SignOuts is the shared record of sessions signed out before they
// expired (the metadata store).
type SignOuts interface {
	SignOut(ctx context.Context, sessionID string, expires time.Time) error
	SignedOut(ctx context.Context, sessionID string) (bool, error)
}

// Console serves the pages.
type Console struct {
	api http.Handler
	// hc sends the API clients' requests to api in process.
	hc       *http.Client
	sealer   *sealer
	cookies  cookies
	ttl      time.Duration
	firstRun *FirstRun
	signOuts SignOuts
	audit    AuditRecorder
	clientOf func(*http.Request) string
	log      *slog.Logger
	pages    *pages
	assets   *assets
	mux      *http.ServeMux

	// maxFileBytes and partBytes decide how the Files page sends a file.
	maxFileBytes, partBytes int64
}

// New builds the console's handler, to be mounted at /console/.
func New(o Options) (*Console, error) {
	if o.API == nil {
		return nil, errors.New("console: Options.API is required")
	}
	s, err := newSealer(o.SessionKey)
	if err != nil {
		return nil, err
	}
	a, err := loadAssets()
	if err != nil {
		return nil, err
	}
	p, err := loadPages(a)
	if err != nil {
		return nil, err
	}
	c := &Console{
		api: o.API, hc: &http.Client{
			Transport: inProcess{api: o.API},
			// The API does not redirect; if it ever did, the key must not follow.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		sealer: s, cookies: cookies{trusted: o.TrustedProxies},
		ttl: o.SessionTTL, firstRun: o.FirstRun, signOuts: o.SignOuts, audit: o.Audit, clientOf: o.ClientAddr, log: o.Log, pages: p, assets: a,
		maxFileBytes: cmp.Or(max(o.MaxFileBytes, 0), DefaultMaxFileBytes),
		partBytes:    cmp.Or(max(o.UploadPartBytes, 0), DefaultUploadPartBytes),
	}
	if c.ttl <= 0 {
		c.ttl = 12 * time.Hour
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.clientOf == nil {
		c.clientOf = peerAddr
	}
	c.routes()
	return c, nil
}

// Prefix is where the console is mounted.
const Prefix = "/console/"

func (c *Console) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /console/{$}", c.home)
	m.HandleFunc("GET /console/assets/{name}", c.assets.serve)
	m.HandleFunc("GET /console/sign-in", c.signInPage)
	m.HandleFunc("POST /console/sign-in", c.signIn)
	m.HandleFunc("POST /console/sign-out", c.signOut)
	m.HandleFunc("GET /console/first-run", c.firstRunPage)
	m.HandleFunc("POST /console/first-run", c.firstRunCreate)

	m.HandleFunc("GET /console/workspaces", c.page(c.workspaces))
	m.HandleFunc("POST /console/workspaces", c.action(c.createWorkspace))
	m.HandleFunc("GET /console/workspaces/{ref}", c.page(c.workspaceEdit))
	m.HandleFunc("POST /console/workspaces/{ref}", c.action(c.updateWorkspace))
	m.HandleFunc("POST /console/workspaces/{ref}/delete", c.action(c.deleteWorkspace))

	m.HandleFunc("GET /console/keys", c.page(c.keys))
	m.HandleFunc("POST /console/keys", c.action(c.createKey))
	m.HandleFunc("POST /console/keys/{hash}/{change}", c.action(c.changeKey))
	m.HandleFunc("GET /console/keys/{hash}/activity", c.page(c.keyActivity))
	m.HandleFunc("GET /console/keys/{hash}/activity.csv", c.page(c.keyActivityCSV))

	m.HandleFunc("GET /console/files", c.page(c.files))
	m.HandleFunc("POST /console/files", c.streamedAction(c.uploadFile))
	m.HandleFunc("GET /console/files/{id}/content", c.page(c.downloadFile))
	m.HandleFunc("POST /console/files/{id}/delete", c.action(c.deleteFile))
	m.HandleFunc("POST /console/files/delete", c.action(c.deleteSelected))
	m.HandleFunc("POST /console/uploads", c.action(c.createUpload))
	m.HandleFunc("POST /console/uploads/{id}/parts", c.streamedAction(c.uploadPart))
	m.HandleFunc("POST /console/uploads/{id}/complete", c.action(c.completeUpload))
	m.HandleFunc("POST /console/uploads/{id}/cancel", c.action(c.cancelUpload))

	m.HandleFunc("GET /console/budgets", c.page(c.budgets))
	m.HandleFunc("POST /console/budgets", c.action(c.setBudget))
	m.HandleFunc("POST /console/budgets/{interval}/delete", c.action(c.deleteBudget))

	m.HandleFunc("GET /console/provider-keys", c.page(c.providerKeys))
	m.HandleFunc("POST /console/provider-keys", c.action(c.createProviderKey))
	m.HandleFunc("POST /console/provider-keys/{id}/{change}", c.action(c.changeProviderKey))

	m.HandleFunc("GET /console/models", c.page(c.models))
	m.HandleFunc("GET /console/models/{author}/{slug}", c.page(c.model))

	m.HandleFunc("GET /console/usage", c.page(c.usage))
	m.HandleFunc("GET /console/spend", c.page(c.spend))
	m.HandleFunc("GET /console/spend.csv", c.page(c.spendCSV))

	m.HandleFunc("GET /console/audit", c.page(c.auditLog))
	m.HandleFunc("/console/", c.notFound)
	c.mux = m
}

// contentSecurityPolicy allows the console's own script, style and images
// only: no inline script or style (an injected tag could run nothing), no
// framing (no clickjacking), forms posting only here, no <base> rewriting.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"frame-ancestors 'none'; form-action 'self'; base-uri 'none'"

// ServeHTTP sets the safety headers of every answer, refuses cross-origin
// state changes, and routes.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if err := crossOrigin.Check(r); err != nil {
			c.refuse(w, r, http.StatusForbidden, "This form was sent from another site, so it was refused. Open the console directly and try again.")
			return
		}
	}
	r = r.WithContext(context.WithValue(r.Context(), browserWriterKey{}, w))
	c.mux.ServeHTTP(w, r)
}

// crossOrigin refuses non-safe requests that browsers mark as coming from
// another origin (Sec-Fetch-Site, else Origin against Host). It is the
// first of two checks; the CSRF token of each form is the second.
var crossOrigin = http.NewCrossOriginProtection()

func (c *Console) notFound(w http.ResponseWriter, r *http.Request) {
	c.refuse(w, r, http.StatusNotFound, "There is no such page in the console.")
}
