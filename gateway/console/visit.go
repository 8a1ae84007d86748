package console

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aigateway/gateway/client"
)

// visit is one request of a signed-in browser: its session, the API as the
// session's key sees it, and who that key is.
type visit struct {
	w    http.ResponseWriter
	r    *http.Request
	c    *Console
	sess session
	api  *client.Client
	me   *whoami
	// refusal, form and status are set when a form was refused: its page
	// is shown again with them (see retry).
	refusal *flash
	form    draft
	status  int
}

// ctx is the context of the API calls made for the visit: the browser's
// request, which also tells the API who the client is.
func (v *visit) ctx() context.Context { return withClient(v.r.Context(), v.r) }

// whoami is the signed-in key as GET /key describes it.
type whoami struct{ client.OwnKey }

// LimitValue is the key's limit (0 without one).
func (m *whoami) LimitValue() float64 {
	if m.Limit == nil {
		return 0
	}
	return *m.Limit
}

// LimitUsed is what the key has spent in its limit's current window.
func (m *whoami) LimitUsed() float64 {
	if m.Limit == nil || m.LimitRemaining == nil {
		return 0
	}
	return max(*m.Limit-*m.LimitRemaining, 0)
}

// apiBase is the base URL of the in-process API client; the host is never
// dialled.
const apiBase = "http://gateway.in-process"

// client returns the API client of key, calling the API in process. It
// fails only for a key the client refuses (an empty one), which neither a
// sealed session nor the sign-in form lets through.
func (c *Console) client(key string) (*client.Client, error) {
	// The person at the browser decides whether to try again; the console
	// never waits on a Retry-After for them.
	return client.New(apiBase, key, client.WithHTTPClient(c.hc),
		client.WithRetry(client.Retry{MaxAttempts: 1}), client.WithUserAgent("gateway-console/1"))
}

// whoami asks the API who key is; a key that no longer works is a 401.
func (c *Console) whoami(ctx context.Context, key string) (*whoami, error) {
	api, err := c.client(key)
	if err != nil {
		return nil, err
	}
	k, err := api.CurrentKey(ctx)
	if err != nil {
		return nil, err
	}
	return &whoami{*k}, nil
}

// begin opens the browser's session and checks its key with the API. It
// answers the browser itself (the sign-in page, or an error page) and
// returns nil when there is no visit to go on with.
//
// Right after a sign-in, the sign-in's own answer of the API stands in for
// the check (see carryCheck): keep leaves it for a later request of the
// same sign-in (home, which only redirects), otherwise it is used up.
func (c *Console) begin(w http.ResponseWriter, r *http.Request, keep bool) *visit {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		http.Redirect(w, r, "/console/sign-in", http.StatusSeeOther)
		return nil
	}
	s, err := c.sealer.open(ck.Value)
	if err != nil {
		c.cookies.clear(w, r, sessionCookie)
		http.Redirect(w, r, "/console/sign-in?m=expired", http.StatusSeeOther)
		return nil
	}
	if c.signOuts != nil {
		out, err := c.signOuts.SignedOut(r.Context(), s.ID)
		if err != nil {
			c.log.Error("console: read sign-outs", "err", err)
			c.refuse(w, r, http.StatusServiceUnavailable, "The console cannot check your session right now: the gateway cannot reach its database. Try again in a moment.")
			return nil
		}
		if out {
			c.cookies.clear(w, r, sessionCookie)
			http.Redirect(w, r, "/console/sign-in?m=signed-out", http.StatusSeeOther)
			return nil
		}
	}
	v := &visit{w: w, r: r, c: c, sess: s}
	api, err := c.client(s.Key)
	if err != nil {
		c.fail(v, err)
		return nil
	}
	v.api = api
	if me := c.takeCheck(w, r, s.ID, keep); me != nil {
		v.me = me
		return v
	}
	me, err := c.whoami(v.ctx(), s.Key)
	if err != nil {
		c.fail(v, err)
		return nil
	}
	v.me = me
	return v
}

// pageFunc serves one page of a visit.
type pageFunc func(v *visit) error

// page adapts a page: a session is required, and an error is answered in
// words (a key that stopped working ends the session).
func (c *Console) page(f pageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := c.begin(w, r, false)
		if v == nil {
			return
		}
		if err := f(v); err != nil {
			c.fail(v, err)
		}
	}
}

// action adapts a state-changing form: a session is required, and the
// form's CSRF token (field csrf, or the X-CSRF-Token header of the
// console's script) must be the session's, whatever the body's encoding:
// a form is small and read whole here, urlencoded or multipart.
func (c *Console) action(f pageFunc) http.HandlerFunc { return c.post(f, true) }

// streamedAction is action for the forms read as a stream, the file
// upload, whose handler checks the token as the body's first part before
// it reads any other (see uploadFile), and a part of an upload in parts,
// whose token comes in its header (see uploadPart).
func (c *Console) streamedAction(f pageFunc) http.HandlerFunc { return c.post(f, false) }

func (c *Console) post(f pageFunc, checkToken bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r = lendVia(r)
		v := c.begin(w, r, false)
		if v == nil {
			return
		}
		if checkToken {
			r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
			token := r.Header.Get("X-CSRF-Token")
			if token == "" {
				token = r.PostFormValue("csrf")
			}
			if !sameToken(token, v.sess.CSRF) {
				c.refuse(w, r, http.StatusForbidden, "This form has expired or did not come from this console. Reload the page and try again.")
				return
			}
		}
		if err := f(v); err != nil {
			c.fail(v, err)
		}
	}
}

// fail answers an error of a visit. The API's refusals are shown with the
// API's own message; a 401 means the key no longer works (revoked,
// disabled, expired, deleted), which ends the session.
func (c *Console) fail(v *visit, err error) {
	var apiErr *client.Error
	switch {
	case errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusUnauthorized:
		c.cookies.clear(v.w, v.r, sessionCookie)
		http.Redirect(v.w, v.r, "/console/sign-in?m=ended", http.StatusSeeOther)
	case errors.As(err, &apiErr):
		c.render(v.w, apiErr.StatusCode, "error", v.view("", "", apiMessage(apiErr)))
	case errors.Is(err, context.Canceled) || v.r.Context().Err() != nil:
		// The browser went away: nothing can be answered, and writing
		// nothing would let net/http claim a 200 on the connection still
		// open. The API aborts its own answers so (the access log says
		// 499).
		panic(http.ErrAbortHandler)
	default:
		c.log.Error("console: page failed", "path", v.r.URL.Path, "err", err)
		c.render(v.w, http.StatusInternalServerError, "error", v.view("", "", "Something went wrong on the server. Try again in a moment."))
	}
}

// apiMessage is the API's refusal in words, with its details (the fields
// it names, the counts it gives) and what the person can do.
func apiMessage(e *client.Error) string {
	if fields := fieldsOf(e); len(fields) > 0 && e.StatusCode == http.StatusBadRequest {
		// The fields say it better than "Invalid request parameters".
		return fieldSentences(fields)
	}
	msg := capitalise(e.Message)
	if d := details(e.Metadata); d != "" {
		msg += ": " + d
	}
	switch e.StatusCode {
	case http.StatusForbidden:
		return msg + " (this needs a key with more rights, such as a management key)."
	case http.StatusTooManyRequests:
		if e.RetryAfter > 0 {
			return fmt.Sprintf("%s. Try again in %s.", msg, e.RetryAfter.Round(time.Second))
		}
		return msg + ". Try again in a moment."
	case http.StatusPaymentRequired:
		return msg + ": the spending limit of this key or a budget of its workspace has been reached."
	}
	return msg
}

// details writes the metadata of a refusal as words: "slug: must be …"
// for the fields it names, "keys: 1" for its counts.
func details(meta map[string]any) string {
	var parts []string
	if fields, ok := meta["fields"].(map[string]any); ok {
		for _, name := range slices.Sorted(maps.Keys(fields)) {
			parts = append(parts, name+" "+detailValue(fields[name]))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(meta)) {
		switch v := meta[name].(type) {
		case string, float64, bool:
			// rule, and a limit named by its class ("rate"), repeat
			// what the message says; a limit in dollars (402) does not.
			_, class := v.(string)
			if name != "rule" && (name != "limit" || !class) {
				parts = append(parts, strings.ReplaceAll(name, "_", " ")+": "+detailValue(v))
			}
		}
	}
	return strings.Join(parts, "; ")
}

// detailValue writes a value of the API's metadata as a person reads it:
// JSON numbers arrive as float64, and a byte limit of 10485760 must not
// read 1.048576e+07.
func detailValue(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// view starts the view of a page of v.
func (v *visit) view(title, nav string, data any) view {
	f := v.refusal
	if f == nil {
		f = v.c.takeFlash(v.w, v.r)
	}
	return view{Title: title, Nav: nav, Me: v.me, CSRF: v.sess.CSRF, Flash: f, Form: v.form, Data: data}
}

// show renders page for v: status 200, or the refusal's status when the
// page shows a refused form again.
func (v *visit) show(page, title, nav string, data any) error {
	status := http.StatusOK
	if v.status != 0 {
		status = v.status
	}
	v.c.render(v.w, status, page, v.view(title, nav, data))
	return nil
}

// done ends an action: the outcome is remembered for the next page, and
// the browser goes to back (Post/Redirect/Get: a reload does not repeat
// the action). An API refusal is the outcome, in the API's words; a 401
// still ends the session.
func (v *visit) done(back string, ok string, err error) error {
	var apiErr *client.Error
	switch {
	case err == nil:
		v.c.setFlash(v.w, v.r, "ok", ok)
	case errors.As(err, &apiErr) && apiErr.StatusCode != http.StatusUnauthorized:
		v.c.setFlash(v.w, v.r, "error", apiMessage(apiErr))
	case errors.As(err, &badInput{}):
		v.c.setFlash(v.w, v.r, "error", err.Error())
	default:
		return err
	}
	http.Redirect(v.w, v.r, back, http.StatusSeeOther)
	return nil
}

// badInput is a form field the console cannot even send to the API.
type badInput struct{ msg string }

func (e badInput) Error() string { return e.msg }

// withQuery is path with the query q (empty values left out).
func withQuery(path string, q url.Values) string {
	for k, vs := range q {
		if len(vs) == 0 || vs[0] == "" {
			delete(q, k)
		}
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}
