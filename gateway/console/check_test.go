package console

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aigateway/gateway/client"
)

// The answer a sign-in carries to its redirects stands in for that
// sign-in's session only, only briefly, and only if this console sealed it.
func TestCarriedCheck(t *testing.T) {
	c, err := New(Options{API: http.NotFoundHandler(), SessionKey: []byte("a session key of thirty-two byte")})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	c.sealer.now = func() time.Time { return now }

	w := httptest.NewRecorder()
	c.carryCheck(w, httptest.NewRequest(http.MethodPost, "/console/sign-in", nil), "s1",
		&whoami{client.OwnKey{Key: client.Key{Hash: "h1", Label: "sk-gw-…abcd"}, IsManagementKey: true}})
	var carried *http.Cookie
	for _, ck := range w.Result().Cookies() {
		if ck.Name == checkCookie {
			carried = ck
		}
	}
	if carried == nil || !carried.HttpOnly || carried.SameSite != http.SameSiteStrictMode || carried.MaxAge != int(checkFor/time.Second) {
		t.Fatalf("carried check cookie %+v: want HttpOnly, SameSite=Strict, Max-Age %v", carried, checkFor)
	}

	take := func(ck *http.Cookie, session string, keep bool) (*whoami, bool) {
		r := httptest.NewRequest(http.MethodGet, "/console/files", nil)
		if ck != nil {
			r.AddCookie(ck)
		}
		w := httptest.NewRecorder()
		me := c.takeCheck(w, r, session, keep)
		cleared := false
		for _, out := range w.Result().Cookies() {
			cleared = cleared || (out.Name == checkCookie && out.MaxAge < 0)
		}
		return me, cleared
	}

	if me, cleared := take(carried, "s1", true); me == nil || me.Hash != "h1" || !me.IsManagementKey || cleared {
		t.Errorf("kept: %+v, cleared %v; want the carried answer, the cookie left", me, cleared)
	}
	if me, cleared := take(carried, "s1", false); me == nil || me.Hash != "h1" || !cleared {
		t.Errorf("used: %+v, cleared %v; want the carried answer, the cookie cleared", me, cleared)
	}
	if me, _ := take(carried, "s2", false); me != nil {
		t.Errorf("another session took the carried answer %+v", me)
	}
	if me, _ := take(nil, "s1", false); me != nil {
		t.Errorf("no cookie gave %+v", me)
	}
	raw, err := base64.RawURLEncoding.DecodeString(carried.Value)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 1
	forged := *carried
	forged.Value = base64.RawURLEncoding.EncodeToString(raw)
	if me, _ := take(&forged, "s1", false); me != nil {
		t.Errorf("an altered cookie gave %+v", me)
	}
	// A session's own value under another use does not open as a check.
	sess, err := c.sealer.seal(session{ID: "s1", Key: "k", Expires: now.Add(time.Hour).Unix(), CSRF: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if me, _ := take(&http.Cookie{Name: checkCookie, Value: sess}, "s1", false); me != nil {
		t.Errorf("a session cookie's value opened as a check: %+v", me)
	}
	now = now.Add(checkFor)
	if me, _ := take(carried, "s1", false); me != nil {
		t.Errorf("a check %v old was taken: %+v", checkFor, me)
	}
}

// A carried answer too large for a browser's cookie is not carried: the
// pages ask the API instead.
func TestLargeCheckIsNotCarried(t *testing.T) {
	c, err := New(Options{API: http.NotFoundHandler(), SessionKey: []byte("a session key of thirty-two byte")})
	if err != nil {
		t.Fatal(err)
	}
	models := make([]string, 400)
	for i := range models {
		models[i] = "openai/gpt-4o"
	}
	w := httptest.NewRecorder()
	c.carryCheck(w, httptest.NewRequest(http.MethodPost, "/console/sign-in", nil), "s1",
		&whoami{client.OwnKey{Key: client.Key{Hash: "h1", Models: models}}})
	if h := w.Result().Header.Values("Set-Cookie"); len(h) != 0 {
		t.Errorf("a check of %d models was carried: %d bytes of cookie", len(models), len(h[0]))
	}
}
