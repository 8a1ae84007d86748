package console_test

import (
	"bytes"
	"context"
	"html"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/client"
	"github.com/aigateway/gateway/policy/keys"
)

func TestEveryAnswerCarriesTheSafetyHeaders(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testConfig(t), true)
	b := g.browser(t)
	for _, path := range []string{"/console/sign-in", "/console/workspaces", "/console/no-such-page"} {
		p := b.get(path)
		want := map[string]string{
			"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
			"X-Content-Type-Options":  "nosniff",
			"Referrer-Policy":         "no-referrer",
		}
		for h, v := range want {
			if got := p.Header.Get(h); got != v {
				t.Errorf("GET %s: %s = %q, want %q", path, h, got, v)
			}
		}
	}
	// No inline script or style: every script and stylesheet is a file.
	body := b.get("/console/sign-in").Body
	for _, inline := range []string{"<script>", "<style", " style=", " onclick=", " onload="} {
		if strings.Contains(body, inline) {
			t.Errorf("sign-in page contains %q", inline)
		}
	}
	// It says where the key is kept: in the browser, sealed in the cookie
	// (the server keeps no session).
	if !strings.Contains(body, "kept in this browser") || strings.Contains(body, "stays on the server") {
		t.Error("the sign-in page does not say the key is kept in the browser")
	}
}

func TestAssetsAreFingerprintedAndCachedForLong(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testConfig(t), true)
	b := g.browser(t)
	links := regexp.MustCompile(`/console/assets/console\.[0-9a-f]{12}\.(css|js)`).FindAllString(b.get("/console/sign-in").Body, -1)
	if len(links) != 2 {
		t.Fatalf("asset links in the page: %q, want the stylesheet and the script", links)
	}
	for _, link := range links {
		p := b.get(link)
		if p.StatusCode != http.StatusOK || !strings.Contains(p.Header.Get("Cache-Control"), "max-age=31536000") {
			t.Errorf("GET %s = %d, Cache-Control %q", link, p.StatusCode, p.Header.Get("Cache-Control"))
		}
	}
	if p := b.get("/console/assets/console.0000.css"); p.StatusCode != http.StatusNotFound {
		t.Errorf("an asset of another build = %d, want 404", p.StatusCode)
	}
}

func TestSignInSealsTheKeyInAStrictCookie(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testConfig(t), true)
	b := g.browser(t)
	p := b.post("/console/sign-in", url.Values{"csrf": {b.csrf("/console/sign-in")}, "key": {g.Management}})
	if p.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in = %d\n%s", p.StatusCode, p.Body)
	}
	var session *http.Cookie
	for _, c := range p.Cookies() {
		if c.Name == "console_session" {
			session = c
		}
	}
	if session == nil {
		t.Fatal("no session cookie")
	}
	if !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Path != "/console/" || session.Secure {
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, Path=/console/, not Secure over plain HTTP", session)
	}
	if strings.Contains(session.Value, g.Management) || strings.Contains(session.Value, strings.TrimPrefix(g.Management, "sk-")) {
		t.Error("the session cookie holds the key in clear")
	}
	if p := b.get("/console/workspaces"); p.StatusCode != http.StatusOK || !strings.Contains(p.Body, "Your workspaces") {
		t.Errorf("workspaces after sign-in = %d", p.StatusCode)
	}
	// The key is never written into a page.
	for _, path := range []string{"/console/workspaces", "/console/keys", "/console/files", "/console/usage"} {
		if p := b.get(path); strings.Contains(p.Body, g.Management) {
			t.Errorf("%s shows the session's key", path)
		}
	}
}

func TestSecureCookieBehindATrustedTLSProxy(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Server.TrustedProxies = []string{"127.0.0.1/32", "::1/128"}
	g := startGateway(t, cfg, true)
	b := g.browser(t)
	token := b.csrf("/console/sign-in")
	req, _ := http.NewRequest(http.MethodPost, g.URL+"/console/sign-in", strings.NewReader(url.Values{"csrf": {token}, "key": {g.Management}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-Proto", "https")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	p := b.do(req)
	if p.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in = %d", p.StatusCode)
	}
	for _, c := range p.Cookies() {
		if c.Name == "console_session" && !c.Secure {
			t.Error("session cookie not Secure although the trusted proxy says the browser used TLS")
		}
	}
}

func TestWrongKeyIsRefusedAndLimitedPerAddress(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Limits.Rate.AuthFailures.Requests, cfg.Limits.Rate.AuthFailures.Burst = 3, 3
	g := startGateway(t, cfg, true)
	b := g.browser(t)
	first := b.post("/console/sign-in", url.Values{"csrf": {b.csrf("/console/sign-in")}, "key": {"sk-wrong"}})
	if first.StatusCode != http.StatusUnauthorized || !strings.Contains(first.Body, "That key was not accepted") {
		t.Fatalf("wrong key = %d, want 401 with a message\n%s", first.StatusCode, first.Body)
	}
	var last answer
	for range 5 {
		last = b.post("/console/sign-in", url.Values{"csrf": {b.csrf("/console/sign-in")}, "key": {"sk-wrong"}})
	}
	if last.StatusCode != http.StatusTooManyRequests || !strings.Contains(last.Body, "Rate limit exceeded. Try again in ") {
		t.Errorf("after repeated failures = %d, want 429 in the API's words\n%s", last.StatusCode, last.Body)
	}
	// The API itself refuses wrong keys from this address now too: the
	// failures were its own. A right key still passes (field report #8).
	_, err := g.api(t, "sk-wrong").CurrentKey(context.Background())
	if e, ok := err.(*client.Error); !ok || e.StatusCode != http.StatusTooManyRequests {
		t.Errorf("API call with a wrong key from the same address after console failures = %v, want 429", err)
	}
	if _, err := g.api(t, g.Management).CurrentKey(context.Background()); err != nil {
		t.Errorf("API call with a right key from the same address after console failures = %v, want it to pass", err)
	}
}

func TestFormsNeedTheSessionToken(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testConfig(t), true)
	b := g.browser(t)
	b.signIn(g.Management)
	if p := b.post("/console/workspaces", url.Values{"name": {"No token"}, "slug": {"no-token"}}); p.StatusCode != http.StatusForbidden {
		t.Errorf("form without token = %d, want 403", p.StatusCode)
	}
	if p := b.post("/console/workspaces", url.Values{"csrf": {"forged"}, "name": {"Forged"}, "slug": {"forged"}}); p.StatusCode != http.StatusForbidden {
		t.Errorf("form with a forged token = %d, want 403", p.StatusCode)
	}
	page, err := g.api(t, g.Management).ListWorkspaces(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range page.Workspaces {
		if w.Slug == "no-token" || w.Slug == "forged" {
			t.Errorf("workspace %q was created by a refused form", w.Slug)
		}
	}
}

// TestMultipartFormsNeedTheSessionToken: a state-changing form posted as
// multipart/form-data is held to the token like any other (field report:
// key disable, workspace delete and the rest passed without one); only the
// upload reads its token from the stream itself.
func TestMultipartFormsNeedTheSessionToken(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testConfig(t), true)
	b := g.browser(t)
	b.signIn(g.Management)
	token := b.csrf("/console/workspaces")
	multipartPost := func(path string, fields url.Values) answer {
		var body strings.Builder
		mw := multipart.NewWriter(&body)
		for k, vs := range fields {
			for _, v := range vs {
				_ = mw.WriteField(k, v)
			}
		}
		_ = mw.Close()
		req, _ := http.NewRequest(http.MethodPost, g.URL+path, strings.NewReader(body.String()))
		req.Header.Set("Content-Type", mw.FormDataContentType())
		return b.do(req)
	}
	if p := multipartPost("/console/workspaces", url.Values{"name": {"No token"}, "slug": {"mp-no-token"}}); p.StatusCode != http.StatusForbidden {
		t.Errorf("multipart form without token = %d, want 403", p.StatusCode)
	}
	if p := multipartPost("/console/workspaces", url.Values{"csrf": {"forged"}, "name": {"Forged"}, "slug": {"mp-forged"}}); p.StatusCode != http.StatusForbidden {
		t.Errorf("multipart form with a forged token = %d, want 403", p.StatusCode)
	}
	// The empty multipart body of the field report.
	req, _ := http.NewRequest(http.MethodPost, g.URL+"/console/workspaces", strings.NewReader("--x--\r\n"))
	req.Header.Set("Content-Type", "multipart/form-data; boundary=x")
	if p := b.do(req); p.StatusCode != http.StatusForbidden {
		t.Errorf("empty multipart body = %d, want 403", p.StatusCode)
	}
	if p := multipartPost("/console/workspaces", url.Values{"csrf": {token}, "name": {"With token"}, "slug": {"mp-token"}}); p.StatusCode != http.StatusSeeOther {
		t.Errorf("multipart form with the token = %d, want 303 (a multipart form is still a form)", p.StatusCode)
	}
	page, err := g.api(t, g.Management).ListWorkspaces(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var slugs []string
	for _, w := range page.Workspaces {
		slugs = append(slugs, w.Slug)
	}
	if slices.Contains(slugs, "mp-no-token") || slices.Contains(slugs, "mp-forged") || !slices.Contains(slugs, "mp-token") {
		t.Errorf("workspaces after the multipart forms: %v", slugs)
	}
}

func TestCrossSitePostIsRefused(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testConfig(t), true)
	b := g.browser(t)
	b.signIn(g.Management)
	token := b.csrf("/console/workspaces")
	req, _ := http.NewRequest(http.MethodPost, g.URL+"/console/workspaces", strings.NewReader(url.Values{"csrf": {token}, "name": {"Evil"}, "slug": {"evil"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	p := b.do(req)
	if p.StatusCode != http.StatusForbidden || !strings.Contains(p.Body, "sent from another site") {
		t.Errorf("cross-site post = %d, want 403 with a message\n%s", p.StatusCode, p.Body)
	}
}

func TestWorkspaceLifecycleAndRefusalInTheAPIsWords(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testConfig(t), true)
	b := g.browser(t)
	b.signIn(g.Management)
	token := b.csrf("/console/workspaces")
	p := b.post("/console/workspaces", url.Values{"csrf": {token}, "name": {"Research"}, "slug": {"research"}})
	if p.StatusCode != http.StatusSeeOther {
		t.Fatalf("create = %d\n%s", p.StatusCode, p.Body)
	}
	list := b.get("/console/workspaces")
	if !strings.Contains(list.Body, "Workspace “Research” created.") || !strings.Contains(list.Body, "<code>research</code>") {
		t.Fatalf("list after create lacks the workspace or the notice:\n%s", list.Body)
	}
	// A bad slug: the API's rule, as a sentence that names the field and
	// says what to do, on the form as it was typed.
	p = b.post("/console/workspaces", url.Values{"csrf": {token}, "name": {"Bad"}, "slug": {"Bad Slug"}})
	for _, want := range []string{
		`role="alert">The slug must be 1 to 50 characters of lowercase letters and digits in segments joined by single hyphens. Correct the slug and send the form again.</p>`,
		`name="name" required maxlength="100" value="Bad"`, `value="Bad Slug" aria-invalid="true" aria-describedby="flash ws-slug-hint" autofocus`,
	} {
		if p.StatusCode != http.StatusBadRequest || !strings.Contains(p.Body, want) {
			t.Errorf("a refused create = %d, lacks %s:\n%s", p.StatusCode, want, p.Body)
		}
	}
	// A workspace holding a key cannot be deleted: the refusal has its counts.
	api := g.api(t, g.Management)
	if _, err := api.CreateKey(context.Background(), client.KeyCreate{Name: "k", Workspace: "research"}); err != nil {
		t.Fatal(err)
	}
	ws, err := api.GetWorkspace(context.Background(), "research")
	if err != nil {
		t.Fatal(err)
	}
	p = b.post("/console/workspaces/research/delete", url.Values{"csrf": {token}})
	if want := `“Research” still holds 1 key, so it cannot be deleted. Delete them first, then delete the workspace: <a href="/console/keys?workspace=` + ws.ID + `">Its keys</a>`; !strings.Contains(p.Body, want) {
		t.Errorf("the refused delete does not say what holds the workspace and where it is:\n%s", p.Body)
	}
	// Edited, then deleted once empty.
	p = b.post("/console/workspaces/research", url.Values{"csrf": {token}, "name": {"Research & Co"}, "slug": {"research"}})
	if p.StatusCode != http.StatusSeeOther {
		t.Fatalf("update = %d", p.StatusCode)
	}
	if w, err := api.GetWorkspace(context.Background(), "research"); err != nil || w.Name != "Research & Co" {
		t.Errorf("after edit: %+v, %v", w, err)
	}
}

// hostile is a name that would run script if it were written into a page
// as markup.
const hostile = `<img src=x onerror=alert(1)>`

func TestNamesAreShownAsText(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testConfig(t), true)
	api := g.api(t, g.Management)
	if _, err := api.CreateWorkspace(context.Background(), client.WorkspaceCreate{Name: hostile, Slug: "hostile"}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.CreateKey(context.Background(), client.KeyCreate{Name: hostile, Workspace: "hostile"}); err != nil {
		t.Fatal(err)
	}
	b := g.browser(t)
	b.signIn(g.Management)
	for _, path := range []string{"/console/workspaces", "/console/keys", "/console/workspaces/hostile", "/console/files?workspace=hostile"} {
		p := b.get(path)
		if p.StatusCode != http.StatusOK {
			t.Fatalf("%s = %d", path, p.StatusCode)
		}
		if strings.Contains(p.Body, "<img") || !strings.Contains(p.Body, html.EscapeString(hostile)) {
			t.Errorf("%s does not show the name as text", path)
		}
	}
	// The API refuses such a file name; the console says why, in its words.
	p := b.upload("/console/files", b.csrf("/console/files"), hostile+".txt", []byte("hello"), true)
	var answer struct {
		OK      bool   `json:"ok"`
		Message string `json:"message"`
	}
	decodeJSON(t, p.Body, &answer)
	if p.StatusCode != http.StatusBadRequest || !strings.Contains(answer.Message, "filename must not contain any of") {
		t.Errorf("upload of %q = %d %+v, want the API's refusal naming the filename rule", hostile, p.StatusCode, answer)
	}
}

// upload posts a file the way the console's script does.
func (b *visitor) upload(path, csrf, name string, content []byte, size bool) answer {
	b.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("csrf", csrf)
	if size {
		_ = mw.WriteField("size", strconv.Itoa(len(content)))
	}
	fw, _ := mw.CreateFormFile("file", name)
	_, _ = fw.Write(content)
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, b.base+path, &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return b.do(req)
}

func TestUploadDownloadDeleteAndRefusals(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Limits.MaxFileBytes = 1 << 20
	g := startGateway(t, cfg, true)
	std := g.createKey(t, keys.RoleStandard)
	b := g.browser(t)
	b.signIn(std)
	token := b.csrf("/console/files")
	content := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	p := b.upload("/console/files", token, "data.bin", content, true)
	var answer struct {
		OK      bool   `json:"ok"`
		Message string `json:"message"`
	}
	decodeJSON(t, p.Body, &answer)
	if p.StatusCode != http.StatusOK || !answer.OK {
		t.Fatalf("upload = %d %+v", p.StatusCode, answer)
	}
	files, err := g.api(t, std).ListFiles(context.Background(), 10, "")
	if err != nil || len(files.Files) != 1 {
		t.Fatalf("files after upload: %+v, %v", files, err)
	}
	id := files.Files[0].ID
	d := b.get("/console/files/" + id + "/content")
	if d.StatusCode != http.StatusOK || d.Body != string(content) {
		t.Fatalf("download = %d, %d bytes, want %d", d.StatusCode, len(d.Body), len(content))
	}
	if ct, cd := d.Header.Get("Content-Type"), d.Header.Get("Content-Disposition"); ct != "application/octet-stream" || !strings.HasPrefix(cd, "attachment") {
		t.Errorf("download served as %q, %q: want an opaque attachment", ct, cd)
	}

	// Too large: the API's 413, in its words.
	big := bytes.Repeat([]byte{1}, 2<<20)
	p = b.upload("/console/files", token, "big.bin", big, true)
	decodeJSON(t, p.Body, &answer)
	if p.StatusCode != http.StatusRequestEntityTooLarge || answer.OK || answer.Message == "" {
		t.Errorf("oversized upload = %d %+v, want 413 with the API's message", p.StatusCode, answer)
	}
	// A missing token: refused before the file is read.
	if p := b.upload("/console/files", "forged", "x.bin", []byte("x"), true); p.StatusCode != http.StatusForbidden {
		t.Errorf("upload with a forged token = %d, want 403", p.StatusCode)
	}

	if p := b.post("/console/files/"+id+"/delete", url.Values{"csrf": {token}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete = %d", p.StatusCode)
	}
	if _, err := g.api(t, std).GetFile(context.Background(), id); err == nil {
		t.Error("the file is still there after delete")
	}
}

func TestRevokedKeyEndsTheSession(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testConfig(t), true)
	api := g.api(t, g.Management)
	created, err := api.CreateKey(context.Background(), client.KeyCreate{Name: "to revoke"})
	if err != nil {
		t.Fatal(err)
	}
	b := g.browser(t)
	b.signIn(created.Secret)
	if p := b.get("/console/files"); p.StatusCode != http.StatusOK {
		t.Fatalf("files = %d", p.StatusCode)
	}
	if _, err := api.UpdateKey(context.Background(), created.Key.Hash, client.KeyUpdate{Disabled: client.Set(true)}); err != nil {
		t.Fatal(err)
	}
	// Revocation reaches the authentication cache within seconds; every
	// page load asks the API, so the session ends with it.
	deadline := time.Now().Add(15 * time.Second)
	for {
		p := b.get("/console/files")
		if p.StatusCode == http.StatusSeeOther && p.Header.Get("Location") == "/console/sign-in?m=ended" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session of a disabled key still works: %d", p.StatusCode)
		}
		time.Sleep(100 * time.Millisecond) // polling the revocation's arrival, not synchronising
	}
	if p := b.get("/console/sign-in?m=ended"); !strings.Contains(p.Body, "no longer works") {
		t.Error("the sign-in page does not say why the session ended")
	}
	if p := b.get("/console/files"); p.StatusCode != http.StatusSeeOther || p.Header.Get("Location") != "/console/sign-in" {
		t.Errorf("after the session ended, files = %d %s: the cookie was not cleared", p.StatusCode, p.Header.Get("Location"))
	}
}

func TestStandardKeyIsReadOnlyOutsideItsFiles(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testConfig(t), true)
	b := g.browser(t)
	b.signIn(g.createKey(t, keys.RoleStandard))
	if p := b.get("/console/"); p.Header.Get("Location") != "/console/files" {
		t.Errorf("home of a standard key goes to %q, want its files", p.Header.Get("Location"))
	}
	if p := b.get("/console/keys"); p.StatusCode != http.StatusForbidden || !strings.Contains(p.Body, "management key") {
		t.Errorf("keys page of a standard key = %d", p.StatusCode)
	}
	token := b.csrf("/console/files")
	if p := b.post("/console/workspaces", url.Values{"csrf": {token}, "name": {"X"}, "slug": {"x"}}); p.StatusCode != http.StatusForbidden || !strings.Contains(p.Body, "Only management keys") {
		t.Errorf("a refused create = %d, want the API's 403 in its words\n%s", p.StatusCode, p.Body)
	}
	if p := b.get("/console/models"); p.StatusCode != http.StatusOK {
		t.Errorf("models for a standard key = %d", p.StatusCode)
	}
}

func TestConsoleOffIsAnUnknownPathOfTheAPI(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Console.Enabled = false
	g := startGateway(t, cfg, true)
	p := g.browser(t).get("/console/")
	if p.StatusCode != http.StatusNotFound || !strings.Contains(p.Body, `"error"`) {
		t.Errorf("console off: GET /console/ = %d %s, want the API's 404 envelope", p.StatusCode, p.Body)
	}
	if link := g.app.FirstRunLink("127.0.0.1:8080"); link != "" {
		t.Errorf("console off offers a first-run link %q", link)
	}
}

func TestFirstRunMakesOneManagementKeyOnce(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testConfig(t), false)
	link := g.app.FirstRunLink("127.0.0.1:8080")
	if !strings.HasPrefix(link, "http://127.0.0.1:8080/console/first-run?token=") {
		t.Fatalf("first-run link = %q", link)
	}
	u, _ := url.Parse(link)
	token := u.Query().Get("token")
	b := g.browser(t)
	if p := b.get("/console/first-run?token=wrong"); p.StatusCode != http.StatusGone {
		t.Errorf("a wrong token = %d, want 410", p.StatusCode)
	}
	form := b.csrf("/console/first-run?token=" + url.QueryEscape(token))
	p := b.post("/console/first-run", url.Values{"csrf": {form}, "token": {token}})
	if p.StatusCode != http.StatusCreated {
		t.Fatalf("first run = %d\n%s", p.StatusCode, p.Body)
	}
	i := strings.Index(p.Body, `id="new-secret" class="secret-value">`)
	if i < 0 {
		t.Fatalf("no secret shown:\n%s", p.Body)
	}
	secret := p.Body[i+len(`id="new-secret" class="secret-value">`):]
	secret = secret[:strings.IndexByte(secret, '<')]
	me, err := g.api(t, secret).CurrentKey(context.Background())
	if err != nil {
		t.Fatalf("the key shown does not work: %v", err)
	}
	_ = me
	// Signed in with it already.
	if p := b.get("/console/workspaces"); p.StatusCode != http.StatusOK {
		t.Errorf("after first run, workspaces = %d", p.StatusCode)
	}
	// The token works once.
	if p := g.browser(t).get("/console/first-run?token=" + url.QueryEscape(token)); p.StatusCode != http.StatusGone {
		t.Errorf("the used token = %d, want 410", p.StatusCode)
	}
	if p := b.post("/console/first-run", url.Values{"csrf": {form}, "token": {token}}); p.StatusCode != http.StatusGone {
		t.Errorf("a second use = %d, want 410", p.StatusCode)
	}
}

// TestFirstRunEndsWhenAKeyIsMadeElsewhere: a key made with the CLI while
// the link is open ends the link; it mints no management key.
func TestFirstRunEndsWhenAKeyIsMadeElsewhere(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testConfig(t), false)
	u, _ := url.Parse(g.app.FirstRunLink("127.0.0.1:8080"))
	token := u.Query().Get("token")
	b := g.browser(t)
	form := b.csrf("/console/first-run?token=" + url.QueryEscape(token))
	g.createKey(t, keys.RoleStandard) // the operator's CLI, meanwhile
	p := b.post("/console/first-run", url.Values{"csrf": {form}, "token": {token}})
	if p.StatusCode != http.StatusGone || strings.Contains(p.Body, `id="new-secret"`) {
		t.Fatalf("first run after a key was made = %d, want 410 and no secret\n%s", p.StatusCode, p.Body)
	}
	if p := b.post("/console/first-run", url.Values{"csrf": {form}, "token": {token}}); p.StatusCode != http.StatusGone {
		t.Errorf("the link again = %d, want 410", p.StatusCode)
	}
}

func TestNoFirstRunOnceAKeyExists(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testConfig(t), true)
	if link := g.app.FirstRunLink("127.0.0.1:8080"); link != "" {
		t.Errorf("a key exists, yet a first-run link %q is offered", link)
	}
}

// Signing out ends the session itself, not only the browser's cookie: a
// copy of the cookie (another tab's, or one stolen) opens nothing after
// it, on any replica, since the sign-out is recorded in the shared store.
func TestSignOutEndsEveryCopyOfTheSession(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testConfig(t), true)
	b := g.browser(t)
	b.signIn(g.Management)
	base := mustURL(t, g.URL+"/console/")
	copied := g.browser(t)
	copied.hc.Jar.SetCookies(base, b.hc.Jar.Cookies(base))
	if p := copied.get("/console/workspaces"); p.StatusCode != http.StatusOK {
		t.Fatalf("the copied cookie before sign-out = %d, want 200", p.StatusCode)
	}
	token := b.csrf("/console/workspaces")
	if p := b.post("/console/sign-out", url.Values{"csrf": {token}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out = %d", p.StatusCode)
	}
	p := copied.get("/console/workspaces")
	if p.StatusCode != http.StatusSeeOther || p.Header.Get("Location") != "/console/sign-in?m=signed-out" {
		t.Errorf("the copied cookie after sign-out = %d %s, want a redirect to sign in", p.StatusCode, p.Header.Get("Location"))
	}
}

// TestRefusedFormsKeepWhatWasTyped: a refused form is answered with its
// page and what was typed, the field at fault marked, never with a
// redirect that loses it; a provider key typed is never written back.
func TestRefusedFormsKeepWhatWasTyped(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testConfig(t), true)
	api := g.api(t, g.Management)
	b := g.browser(t)
	b.signIn(g.Management)
	token := b.csrf("/console/keys")

	p := b.post("/console/keys", url.Values{"csrf": {token}, "name": {"nightly build"}, "limit": {"twelve"}, "limit_reset": {"weekly"}, "expires_in_days": {"30"}})
	for _, want := range []string{
		`role="alert">The limit must be an amount in US dollars, such as 25 or 12.50: correct the limit and send the form again.</p>`,
		`value="nightly build"`, `value="twelve" aria-invalid="true" aria-describedby="flash" autofocus`,
		`<option value="weekly" selected>`, `value="30"`,
	} {
		if p.StatusCode != http.StatusBadRequest || !strings.Contains(p.Body, want) {
			t.Errorf("a key with a bad limit = %d, lacks %s:\n%s", p.StatusCode, want, p.Body)
		}
	}

	// A key's limit: the details it is in is open, with the value typed.
	k, err := api.CreateKey(context.Background(), client.KeyCreate{Name: "limited"})
	if err != nil {
		t.Fatal(err)
	}
	p = b.post("/console/keys/"+k.Key.Hash+"/limit", url.Values{"csrf": {token}, "limit": {"-3"}})
	if want := `value="-3" aria-invalid="true"`; p.StatusCode != http.StatusBadRequest || !strings.Contains(p.Body, want) || !strings.Contains(p.Body, "<details open>") {
		t.Errorf("a refused limit = %d, lacks %s in an open step:\n%s", p.StatusCode, want, p.Body)
	}

	// A provider key: what was typed comes back, but the secret.
	const secret = "sk-never-echoed-0123456789"
	p = b.post("/console/provider-keys", url.Values{"csrf": {token}, "provider": {"anthropic"}, "key": {secret}, "name": {"backup"}, "sort_order": {"1.5"}})
	if p.StatusCode != http.StatusBadRequest || !strings.Contains(p.Body, `value="backup"`) || !strings.Contains(p.Body, `<option value="anthropic" selected>`) ||
		!strings.Contains(p.Body, "was not kept: enter it again") {
		t.Errorf("a refused provider key = %d:\n%s", p.StatusCode, p.Body)
	}
	if strings.Contains(p.Body, secret) {
		t.Error("the provider key's secret was written back into the page")
	}
}
