package console

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aigateway/gateway/client"
	"github.com/aigateway/gateway/internal/audit"
)

// home sends the browser where its key can do something: workspaces for a
// management key, files for any other.
func (c *Console) home(w http.ResponseWriter, r *http.Request) {
	v := c.begin(w, r, true)
	if v == nil {
		return
	}
	if v.me.IsManagementKey {
		http.Redirect(w, r, "/console/workspaces", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/console/files", http.StatusSeeOther)
}

// signInNotices are the messages the sign-in page may show; the query
// names one, so no link can put its own words on the page.
var signInNotices = map[string]flash{
	"ended":      {Kind: "error", Text: "Your session ended: the key you signed in with no longer works (it was revoked, disabled, deleted or has expired). Sign in with a working key."},
	"expired":    {Kind: "error", Text: "Your session has expired. Sign in again."},
	"signed-out": {Kind: "ok", Text: "You are signed out."},
}

type signInData struct {
	FormToken string
}

// formToken is the CSRF token of the forms shown before a session exists
// (sign-in, first run): a random value in a cookie that the form must
// repeat, which a page of another site can neither read nor set.
func (c *Console) formToken(w http.ResponseWriter, r *http.Request) string {
	if ck, err := r.Cookie(formCookie); err == nil && len(ck.Value) >= 16 {
		return ck.Value
	}
	t := newToken()
	c.cookies.set(w, r, formCookie, t, 0)
	return t
}

// formTokenOK checks a pre-session form's token against its cookie.
func formTokenOK(r *http.Request) bool {
	ck, err := r.Cookie(formCookie)
	return err == nil && sameToken(r.PostFormValue("csrf"), ck.Value)
}

func (c *Console) signInPage(w http.ResponseWriter, r *http.Request) {
	v := view{Title: "Sign in", Data: signInData{FormToken: c.formToken(w, r)}}
	if n, ok := signInNotices[r.URL.Query().Get("m")]; ok {
		v.Flash = &n
	}
	c.render(w, http.StatusOK, "signin", v)
}

// maxKeyLength bounds what is accepted as a key, far above any real one.
const maxKeyLength = 512

// signIn checks the key with the API (GET /key) and starts a session.
// The check is an ordinary authentication of the API: a wrong key counts
// as a failed authentication of the browser's address, and past the API's
// limit of those the address is refused (429) before any key is looked at.
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if !formTokenOK(r) {
		c.refuse(w, r, http.StatusForbidden, "This sign-in form has expired. Reload the page and sign in again.")
		return
	}
	key := strings.TrimSpace(r.PostFormValue("key"))
	again := func(status int, msg string) {
		c.render(w, status, "signin", view{Title: "Sign in", Flash: &flash{Kind: "error", Text: msg}, Data: signInData{FormToken: c.formToken(w, r)}})
	}
	if key == "" || len(key) > maxKeyLength {
		again(http.StatusBadRequest, "Enter an API key to sign in.")
		return
	}
	me, err := c.whoami(withClient(r.Context(), r), key)
	var apiErr *client.Error
	switch {
	case err == nil:
	case errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusUnauthorized:
		again(http.StatusUnauthorized, "That key was not accepted: it is unknown, disabled, deleted or expired.")
		return
	case errors.As(err, &apiErr):
		again(apiErr.StatusCode, apiMessage(apiErr))
		return
	default:
		c.log.Error("console: sign-in check failed", "err", err)
		again(http.StatusInternalServerError, "The key could not be checked just now. Try again in a moment.")
		return
	}
	// Recorded before the session is issued: a sign-in that leaves no
	// trace does not happen.
	if c.audit != nil {
		actor := c.actor(w, r, me.Hash, userOf(me))
		if err := c.audit.RecordAudit(r.Context(), audit.Entry{Actor: actor, Action: audit.ConsoleSignIn, Target: me.Hash}); err != nil {
			c.log.Error("console: record sign-in", "err", err)
			again(http.StatusServiceUnavailable, "Signing in failed: the gateway cannot reach its database. Try again in a moment.")
			return
		}
	}
	id, err := c.startSession(w, r, key, me)
	if err != nil {
		c.log.Error("console: seal session", "err", err)
		again(http.StatusInternalServerError, "The session could not be started. Try again.")
		return
	}
	c.carryCheck(w, r, id, me)
	http.Redirect(w, r, "/console/", http.StatusSeeOther)
}

// startSession seals key into the session cookie and returns the
// session's id. me is the API's answer about the key, when there is one.
func (c *Console) startSession(w http.ResponseWriter, r *http.Request, key string, me *whoami) (string, error) {
	s := session{ID: newToken(), Key: key, Expires: c.sealer.now().Add(c.ttl).Unix(), CSRF: newToken()}
	if me != nil {
		s.Hash, s.User = me.Hash, userOf(me)
	}
	v, err := c.sealer.seal(s)
	if err != nil {
		return "", err
	}
	c.cookies.set(w, r, sessionCookie, v, c.ttl)
	c.cookies.clear(w, r, formCookie)
	return s.ID, nil
}

// checkCookie carries a sign-in's answer of GET /key over the redirects
// that follow it (to /console/, then to the first page), so signing in
// asks the API who the key is once instead of once per hop. It is sealed
// like the session, bound to the session's id, good for checkFor only, and
// used up by the first page: every later page asks the API again. The
// first page's own calls of the API still carry the key, so a key revoked
// meanwhile ends the session there as anywhere else.
const checkCookie = "console_check"

// checkFor bounds the age of a carried answer.
const checkFor = 30 * time.Second

// maxCheckCookie bounds a carried answer: a key with a long model list is
// asked about again rather than carried in a cookie a browser would drop.
const maxCheckCookie = 3 << 10

// checkAAD binds a sealed value to its use, as sessionAAD does.
var checkAAD = []byte("gateway console sign-in check v1")

// carriedCheck is what checkCookie holds.
type carriedCheck struct {
	Session string        `json:"s"`
	Until   int64         `json:"u"` // Unix seconds
	Key     client.OwnKey `json:"k"`
}

// carryCheck remembers me, the API's answer of the sign-in of session id,
// for the requests its redirects lead to. Failing to is harmless: they
// ask the API themselves.
func (c *Console) carryCheck(w http.ResponseWriter, r *http.Request, id string, me *whoami) {
	if me == nil {
		return
	}
	b, err := json.Marshal(carriedCheck{Session: id, Until: c.sealer.now().Add(checkFor).Unix(), Key: me.OwnKey})
	if err != nil {
		return
	}
	v, err := c.sealer.sealValue(b, checkAAD)
	if err != nil || len(v) > maxCheckCookie {
		return
	}
	c.cookies.set(w, r, checkCookie, v, checkFor)
}

// takeCheck returns the answer carried from the sign-in of session id, or
// nil when there is none, it is another session's, or it is too old. The
// cookie is cleared unless keep.
func (c *Console) takeCheck(w http.ResponseWriter, r *http.Request, id string, keep bool) *whoami {
	ck, err := r.Cookie(checkCookie)
	if err != nil {
		return nil
	}
	if !keep {
		c.cookies.clear(w, r, checkCookie)
	}
	b, err := c.sealer.openValue(ck.Value, checkAAD)
	if err != nil {
		return nil
	}
	var cc carriedCheck
	if json.Unmarshal(b, &cc) != nil || cc.Session == "" || cc.Session != id || c.sealer.now().Unix() >= cc.Until {
		return nil
	}
	return &whoami{cc.Key}
}

// signOut clears the session. It needs the session's CSRF token, so no
// other site can sign a visitor out.
func (c *Console) signOut(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if ck, err := r.Cookie(sessionCookie); err == nil {
		if s, err := c.sealer.open(ck.Value); err == nil {
			if !sameToken(r.PostFormValue("csrf"), s.CSRF) {
				c.refuse(w, r, http.StatusForbidden, "This form has expired. Reload the page and sign out again.")
				return
			}
			// Recorded for every replica: a copy of the cookie (another
			// tab's, or a stolen one) opens nothing any more.
			if c.signOuts != nil {
				// The store records the sign-out with its actor.
				ctx := audit.WithActor(r.Context(), c.actor(w, r, s.Hash, s.User))
				if err := c.signOuts.SignOut(ctx, s.ID, time.Unix(s.Expires, 0)); err != nil {
					c.log.Error("console: record sign-out", "err", err)
					c.refuse(w, r, http.StatusServiceUnavailable, "Signing out failed: the gateway cannot reach its database. Try again in a moment.")
					return
				}
			}
		}
	}
	c.cookies.clear(w, r, sessionCookie)
	http.Redirect(w, r, "/console/sign-in?m=signed-out", http.StatusSeeOther)
}

// FirstRun lets the first visitor of an empty gateway create its first
// management key, with a one-time token printed by `gateway serve` (as
// notebook servers print theirs). It is the one thing the console does not
// do through the API: there is no key yet to call it with. The token works
// once and only until it expires.
type FirstRun struct {
	token   string
	expires time.Time
	create  func(ctx context.Context) (string, error)
	now     func() time.Time

	mu   sync.Mutex
	used bool
}

// NewFirstRun makes a first-run token valid for ttl; create makes the
// management key and returns its secret, or ErrFirstRunOver once any key
// exists.
func NewFirstRun(ttl time.Duration, create func(ctx context.Context) (string, error)) *FirstRun {
	return &FirstRun{token: newToken(), expires: time.Now().Add(ttl), create: create, now: time.Now}
}

// Token is the one-time token, for the sign-in link `serve` prints.
func (f *FirstRun) Token() string { return f.token }

// valid reports whether token is the unused, unexpired token.
func (f *FirstRun) valid(token string) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.used && f.now().Before(f.expires) && sameToken(token, f.token)
}

// take uses the token up, if it is still valid.
func (f *FirstRun) take(token string) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.used || !f.now().Before(f.expires) || !sameToken(token, f.token) {
		return false
	}
	f.used = true
	return true
}

// giveBack makes the token usable again after the key could not be made.
func (f *FirstRun) giveBack() {
	f.mu.Lock()
	f.used = false
	f.mu.Unlock()
}

type firstRunData struct {
	FormToken string
	Token     string
	Secret    string
}

const firstRunGone = "This first-run link has already been used or has expired, or a key exists already. Sign in with a key, or create one with `gateway keys create --management --name NAME --user USER`."

// ErrFirstRunOver is what a FirstRun's create returns when the gateway is
// no longer empty (a key was made some other way): the link mints nothing
// and is used up.
var ErrFirstRunOver = errors.New("console: a key exists already; the first-run link is over")

func (c *Console) firstRunPage(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("token")
	if !c.firstRun.valid(token) {
		c.refuse(w, r, http.StatusGone, firstRunGone)
		return
	}
	c.render(w, http.StatusOK, "firstrun", view{Title: "Welcome", Data: firstRunData{FormToken: c.formToken(w, r), Token: token}})
}

// firstRunCreate makes the first management key, shows its secret once and
// signs the visitor in with it.
func (c *Console) firstRunCreate(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if !c.firstRun.valid(r.PostFormValue("token")) {
		c.refuse(w, r, http.StatusGone, firstRunGone)
		return
	}
	if !formTokenOK(r) {
		c.refuse(w, r, http.StatusForbidden, "This form has expired. Open the first-run link again.")
		return
	}
	if !c.firstRun.take(r.PostFormValue("token")) {
		c.refuse(w, r, http.StatusGone, firstRunGone)
		return
	}
	// The key is made, and the link's use recorded, with the browser as
	// actor; the user is the one the key is made for.
	ctx := audit.WithActor(r.Context(), c.actor(w, r, "", ""))
	secret, err := c.firstRun.create(ctx)
	if errors.Is(err, ErrFirstRunOver) {
		c.refuse(w, r, http.StatusGone, firstRunGone)
		return
	}
	if err != nil {
		c.firstRun.giveBack()
		c.log.Error("console: first-run key creation failed", "err", err)
		c.refuse(w, r, http.StatusInternalServerError, "The key could not be created. Try the link again.")
		return
	}
	// The API's answer about the new key names it in the session, for
	// the record of its sign-out; without it the session still works.
	me, err := c.whoami(withClient(r.Context(), r), secret)
	if err != nil {
		c.log.Warn("console: read the first key", "err", err)
	}
	if _, err := c.startSession(w, r, secret, me); err != nil {
		c.log.Error("console: seal session", "err", err)
	}
	c.render(w, http.StatusCreated, "firstrun", view{Title: "Your management key", Data: firstRunData{Secret: secret}})
}
