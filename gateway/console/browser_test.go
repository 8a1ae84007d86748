package console_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/client"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestInTheBrowser drives the console in a real headless Chromium through
// what a person does: sign in, workspaces, keys, files, budgets, and the
// attacks the console must withstand.
func TestInTheBrowser(t *testing.T) {
	c := openChrome(t)
	g := startGateway(t, testConfig(t), true)
	api := g.api(t, g.Management)
	ctx := c.ctx
	run, text, shoot := c.run, c.text, c.check
	flash := `p.flash`

	// Sign in with the management key.
	run("sign in",
		chromedp.Navigate(g.URL+"/console/sign-in"),
		chromedp.WaitVisible(chromedp.CSS(`#key`)),
	)
	shoot("sign-in")
	// With the keyboard alone: Tab until the key's field has the focus,
	// type the key, Enter.
	for tabs := 0; ; tabs++ {
		focused, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement ? document.activeElement.id : ""`))
		if err != nil {
			t.Fatal(err)
		}
		if focused == "key" {
			break
		}
		if tabs == 10 {
			t.Fatalf("the key's field is not reached with Tab (focus on %q)", focused)
		}
		run("tab", chromedp.KeyEvent(kb.Tab))
	}
	run("sign in",
		chromedp.KeyEvent(g.Management),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(`#ws-name`)),
	)
	// The header says who is signed in: the user, the key and its role.
	management, err := api.CurrentKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := text(`.who`), "Signed in as u1 with management key "+management.Label; got != want {
		t.Errorf("the header says %q, want %q", got, want)
	}

	// Create a workspace.
	run("create workspace",
		chromedp.SendKeys(chromedp.CSS(`#ws-name`), "Research"),
		chromedp.SendKeys(chromedp.CSS(`#ws-slug`), "research"),
		chromedp.Submit(chromedp.CSS(`#ws-name`)),
		chromedp.WaitVisible(chromedp.CSS(flash)),
	)
	if got := text(flash); !strings.Contains(got, "Workspace “Research” created.") {
		t.Fatalf("after creating a workspace: %q", got)
	}
	ws, err := api.GetWorkspace(ctx, "research")
	if err != nil {
		t.Fatal(err)
	}
	shoot("workspaces")
	run("edit page", chromedp.Navigate(g.URL+"/console/workspaces/research"), chromedp.WaitVisible(chromedp.CSS(`#ws-sort`)))
	shoot("workspace")

	// Create a key: its secret is shown once.
	run("create key",
		chromedp.Navigate(g.URL+"/console/keys"),
		chromedp.WaitVisible(chromedp.CSS(`#key-name`)),
		chromedp.SendKeys(chromedp.CSS(`#key-name`), "ci key"),
		chromedp.SetValue(chromedp.CSS(`#key-workspace`), ws.ID),
		chromedp.SendKeys(chromedp.CSS(`#key-limit`), "5"),
		chromedp.SetValue(chromedp.CSS(`#key-reset`), "daily"),
		chromedp.Submit(chromedp.CSS(`#key-name`)),
		chromedp.WaitVisible(chromedp.CSS(`#new-secret`)),
	)
	secret := strings.TrimSpace(text(`#new-secret`))
	created, err := g.api(t, secret).CurrentKey(ctx)
	if err != nil {
		t.Fatalf("the secret shown does not work: %v", err)
	}
	shoot("keys-created")
	run("keys again",
		chromedp.Navigate(g.URL+"/console/keys"),
		chromedp.WaitVisible(chromedp.CSS(`#key-name`)),
	)
	if evalJS[bool](t, ctx, `document.body.textContent.includes(`+jsString(secret)+`)`) {
		t.Error("the key's secret is shown a second time")
	}

	// Upload 20 MiB and watch the progress reach 100 %.
	dir := t.TempDir()
	// Text, since the API accepts only the file types it recognises;
	// random, so a byte out of place shows.
	raw := make([]byte, 10<<20)
	_, _ = rand.Read(raw)
	content := []byte(hex.EncodeToString(raw))
	upload := filepath.Join(dir, "twenty.txt")
	if err := os.WriteFile(upload, content, 0o600); err != nil {
		t.Fatal(err)
	}
	filesURL := g.URL + "/console/files?workspace=" + ws.ID
	run("upload",
		chromedp.Navigate(filesURL),
		chromedp.WaitVisible(chromedp.CSS(`#file`)),
		// Record every percentage the page shows, to see it move.
		chromedp.Evaluate[chromedp.Void](`window.seen = []; new MutationObserver(() => window.seen.push(document.getElementById('upload-percent').textContent)).observe(document.getElementById('upload-percent'), {childList: true, characterData: true, subtree: true}); undefined`),
		chromedp.SetUploadFiles(chromedp.CSS(`#file`), []string{upload}),
		chromedp.Click(chromedp.CSS(`#upload button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#upload-message`)),
	)
	if got := text(`#upload-message`); !strings.Contains(got, "Uploaded “twenty.txt” (20971520 bytes).") {
		t.Fatalf("upload message: %q", got)
	}
	seen := evalJS[[]string](t, ctx, `window.seen`)
	if got := text(`#upload-percent`); got != "100 %" {
		t.Errorf("progress after the upload: %q, want 100 %%", got)
	}
	if len(seen) == 0 || seen[len(seen)-1] != "100 %" {
		t.Errorf("progress shown during the upload: %q, want it to end at 100 %%", seen)
	}
	if got := text(`#upload-message`); !strings.Contains(got, "Uploaded “twenty.txt” (20971520 bytes).") {
		t.Errorf("upload message: %q", got)
	}
	shoot("files-uploaded")
	run("list", chromedp.Click(chromedp.CSS(`#upload-done`)), chromedp.WaitVisible(chromedp.CSS(`td.filename`)))
	if got := text(`td.filename`); got != "twenty.txt" {
		t.Errorf("first file listed: %q", got)
	}
	shoot("files")

	// Download it: the bytes are the ones sent.
	downloads := t.TempDir()
	done := make(chan string, 1)
	completed := func(guid string, state browser.DownloadProgressState) {
		if state == browser.DownloadProgressStateCompleted {
			select {
			case done <- guid:
			default:
			}
		}
	}
	if err := chromedp.ListenBrowser(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *browser.EventDownloadProgress:
			completed(ev.GUID, ev.State)
		case browser.EventDownloadProgress:
			completed(ev.GUID, ev.State)
		}
	}); err != nil {
		t.Fatal(err)
	}
	events := true
	if _, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: downloads, EventsEnabled: &events,
	}); err != nil {
		t.Fatal(err)
	}
	run("download", chromedp.Click(chromedp.CSS(`td.actions a[download]`)))
	select {
	case id := <-done:
		got, err := os.ReadFile(filepath.Join(downloads, id))
		if err != nil {
			t.Fatal(err)
		}
		if sha256.Sum256(got) != sha256.Sum256(content) {
			t.Errorf("downloaded %d bytes that differ from the %d uploaded", len(got), len(content))
		}
	case <-ctx.Done():
		t.Fatal("the download did not finish")
	}

	// Delete it.
	run("delete",
		chromedp.Click(chromedp.CSS(`td.actions summary`)),
		chromedp.Click(chromedp.CSS(`td.actions details button`)),
		chromedp.WaitVisible(chromedp.CSS(flash)),
	)
	if got := text(flash); got != "File deleted." {
		t.Errorf("after delete: %q", got)
	}
	if page, err := api.ListFiles(ctx, 10, "", client.InWorkspace(ws.ID)); err != nil || len(page.Files) != 0 {
		t.Errorf("files left after delete: %+v, %v", page, err)
	}

	// A budget, then usage reported through the API: the bar moves.
	meter := func(id string) float64 {
		run("meter", chromedp.WaitVisible(chromedp.CSS("#"+id)))
		return evalJS[float64](t, ctx, `document.getElementById(`+jsString(id)+`).value`)
	}
	run("set budget",
		chromedp.Navigate(g.URL+"/console/budgets?workspace="+ws.ID),
		chromedp.WaitVisible(chromedp.CSS(`#budget-limit`)),
		chromedp.SetValue(chromedp.CSS(`#budget-interval`), "daily"),
		chromedp.SendKeys(chromedp.CSS(`#budget-limit`), "10"),
		chromedp.Submit(chromedp.CSS(`#budget-limit`)),
		chromedp.WaitVisible(chromedp.CSS(flash)),
	)
	if got := text(flash); got != "The daily budget is set." {
		t.Fatalf("after setting a budget: %q", got)
	}
	if v := meter("meter-daily"); v != 0 {
		t.Errorf("daily budget bar before any usage: %v", v)
	}
	service := g.createKey(t, keys.RoleService)
	keyHash := findKeyHash(t, api, created.Label)
	if _, err := g.api(t, service).ReportUsage(ctx, []client.UsageReport{{ID: "console-test-1", KeyHash: keyHash, Cost: 2.5}}); err != nil {
		t.Fatal(err)
	}
	run("reload budgets", chromedp.Reload())
	if v := meter("meter-daily"); v != 2.5 {
		t.Errorf("daily budget bar after $2.50 of usage: %v, want 2.5", v)
	}
	if v := meter("key-meter-0"); v != 2.5 {
		t.Errorf("key limit bar after $2.50 of usage: %v, want 2.5", v)
	}
	// The workspace's chart of spend per day has a bar for today, and
	// only today, of that height.
	todayBar := func(chart string) {
		t.Helper()
		sel := "#" + chart + ` g.day[data-date="` + time.Now().UTC().Format(time.DateOnly) + `"] rect.spend`
		run("chart", chromedp.WaitVisible(chromedp.CSS("#"+chart+" svg")))
		bars := evalJS[[]float64](t, ctx, `Array.from(document.querySelectorAll('#`+chart+` rect.spend')).map(r => r.height.baseVal.value)`)
		height := evalJS[float64](t, ctx, `document.querySelector(`+jsString(sel)+`).height.baseVal.value`)
		usage := evalJS[string](t, ctx, `document.querySelector(`+jsString(sel)+`).dataset.usage`)
		nonZero := 0
		for _, h := range bars {
			if h > 0 {
				nonZero++
			}
		}
		if len(bars) != 30 || height <= 0 || usage != "2.5" || nonZero != 1 {
			t.Errorf("%s: %d bars, %d of them not empty; today's is %v high for %q, want one bar of 2.5", chart, len(bars), nonZero, height, usage)
		}
		// The figures are there in words too, for those who cannot see it.
		if desc := text("#" + chart + " figcaption"); !strings.Contains(desc, "$2.50 spent") {
			t.Errorf("%s: the chart's summary says %q", chart, desc)
		}
	}
	todayBar("ws-chart")
	shoot("budgets")
	run("key chart",
		chromedp.Navigate(g.URL+"/console/keys?chart="+keyHash),
		chromedp.WaitVisible(chromedp.CSS(`#key-chart-heading`)),
	)
	todayBar("key-chart")
	shoot("keys-chart")

	// The other pages, for the screenshots and to see they render.
	models, err := api.QueryModels(ctx, client.ModelQuery{Limit: 1})
	if err != nil || len(models.Models) == 0 {
		t.Fatalf("models: %v", err)
	}
	for _, p := range []struct{ name, path, ready string }{
		{"provider-keys", "/console/provider-keys?workspace=" + ws.ID, "#pk-key"},
		{"models", "/console/models?sort=pricing-low-to-high", "#m-sort"},
		{"model", "/console/models/" + models.Models[0].ID, "#main h1"},
		{"usage", "/console/usage", "dl.facts"},
	} {
		run(p.name, chromedp.Navigate(g.URL+p.path), chromedp.WaitVisible(chromedp.CSS(p.ready)))
		shoot(p.name)
	}

	// Names that are markup show as text, and open no dialog.
	hostileFile := filepath.Join(dir, hostile+".txt")
	if err := os.WriteFile(hostileFile, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	run("hostile workspace",
		chromedp.Navigate(g.URL+"/console/workspaces"),
		chromedp.WaitVisible(chromedp.CSS(`#ws-name`)),
		chromedp.SendKeys(chromedp.CSS(`#ws-name`), hostile),
		chromedp.SendKeys(chromedp.CSS(`#ws-slug`), "hostile"),
		chromedp.Submit(chromedp.CSS(`#ws-name`)),
		chromedp.WaitVisible(chromedp.CSS(flash)),
	)
	imgs := evalJS[int](t, ctx, `document.querySelectorAll('main img').length`)
	if imgs != 0 || !strings.Contains(text(`table.list`), hostile) {
		t.Errorf("the workspace named %q is not shown as text (%d images in the page)", hostile, imgs)
	}
	run("hostile upload",
		chromedp.Navigate(filesURL),
		chromedp.WaitVisible(chromedp.CSS(`#file`)),
		chromedp.SetUploadFiles(chromedp.CSS(`#file`), []string{hostileFile}),
		chromedp.Click(chromedp.CSS(`#upload button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#upload-message`)),
	)
	if got := text(`#upload-message`); !strings.Contains(got, "filename must not contain any of") {
		t.Errorf("upload of %q: %q, want the API's refusal of the name", hostile, got)
	}
	shoot("files-refused")

	// A form posted from another site is refused.
	attacker := crossSiteForm(t, g.URL)
	run("cross-site post",
		chromedp.Navigate(attacker),
		chromedp.WaitVisible(chromedp.CSS(`main`)),
	)
	body := text(`main`)
	if !strings.Contains(body, "sent from another site") {
		t.Errorf("cross-site post answered: %q", body)
	}
	if _, err := api.GetWorkspace(ctx, "evil"); err == nil {
		t.Error("the cross-site post created a workspace")
	}

	// Sign out, sign in with the new key, revoke it: the session ends.
	run("sign out",
		chromedp.Navigate(g.URL+"/console/usage"),
		chromedp.Click(chromedp.CSS(`.signout button`)),
		chromedp.WaitVisible(chromedp.CSS(`#key`)),
		chromedp.SendKeys(chromedp.CSS(`#key`), secret),
		chromedp.Submit(chromedp.CSS(`#key`)),
		chromedp.WaitVisible(chromedp.CSS(`#upload`)),
	)
	// A standard key sees its own spend per day.
	run("own usage", chromedp.Navigate(g.URL+"/console/usage"), chromedp.WaitVisible(chromedp.CSS(`dl.facts`)))
	todayBar("key-chart")
	if got, want := text(`.who`), "Signed in as u1 with standard key "+created.Label; got != want {
		t.Errorf("the header says %q, want %q", got, want)
	}
	shoot("usage-standard")
	if _, err := api.UpdateKey(ctx, keyHash, client.KeyUpdate{Disabled: client.Set(true)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		run("reload", chromedp.Navigate(filesURL), chromedp.WaitReady(chromedp.CSS(`body`)))
		if evalJS[bool](t, ctx, `document.body.textContent.includes('Your session ended')`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the session of a disabled key did not end")
		}
		time.Sleep(200 * time.Millisecond) // polling for the revocation to arrive, not synchronising
	}
	shoot("session-ended")
}

// evalJS evaluates expr in the page.
func evalJS[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// findKeyHash is the hash of the key with label.
func findKeyHash(t *testing.T, api *client.Client, label string) string {
	t.Helper()
	for k, err := range api.Keys(context.Background(), client.KeyQuery{IncludeDisabled: true}) {
		if err != nil {
			t.Fatal(err)
		}
		if k.Label == label {
			return k.Hash
		}
	}
	t.Fatalf("no key labelled %q", label)
	return ""
}

// crossSiteForm serves, on another site (localhost rather than
// 127.0.0.1), a page that posts a form to the console as soon as it loads,
// and returns its address.
func crossSiteForm(t *testing.T, console string) string {
	t.Helper()
	target := console + "/console/workspaces"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		fmt.Fprintf(&b, `<!doctype html><form id=f method=post action=%q><input name=name value=Evil><input name=slug value=evil><input name=csrf value=guess></form><script>document.getElementById('f').submit()</script>`, target)
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write(b.Bytes())
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return "http://localhost:" + port + "/"
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`).Replace(s) + "'"
}
