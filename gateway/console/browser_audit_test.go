package console_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aigateway/gateway/client"
	"github.com/chromedp/chromedp"
)

// TestAuditPageInTheBrowser: the audit log page lists the user's entries,
// newest first, fifty a page with a link to older ones and back to the
// newest; each row names the action, its target, the acting key, the page
// or route it came through and what it changed; the action filter keeps
// one action. Every state passes axe-core at 360 and 1280 px.
func TestAuditPageInTheBrowser(t *testing.T) {
	c, _, api := signedIn(t)
	ctx := context.Background()
	me, err := api.CurrentKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.run("create a workspace in the console",
		chromedp.SendKeys(chromedp.CSS(`#ws-name`), "Audited"),
		chromedp.SendKeys(chromedp.CSS(`#ws-slug`), "audited"),
		chromedp.Submit(chromedp.CSS(`#ws-name`)),
		chromedp.WaitVisible(chromedp.CSS(`p.flash.ok`)),
	)
	k, err := api.CreateKey(ctx, client.KeyCreate{Name: "renamed 0"})
	if err != nil {
		t.Fatal(err)
	}
	// Enough changes for a second page.
	for i := 1; i <= 50; i++ {
		if _, err := api.UpdateKey(ctx, k.Key.Hash, client.KeyUpdate{Name: client.Set(fmt.Sprintf("renamed %d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	// noSideScroll fails the test if the page is wider than the window.
	noSideScroll := func(at string) {
		t.Helper()
		for _, width := range checkedWidths {
			c.run("viewport", chromedp.EmulateViewport(width, 800, chromedp.EmulatePortrait))
			if wide := evalJS[bool](t, c.ctx, `document.documentElement.scrollWidth > document.documentElement.clientWidth`); wide {
				t.Errorf("%s: the page scrolls sideways at %d px", at, width)
			}
		}
		c.run("restore viewport", chromedp.ResetViewport())
	}
	rows := func() []string {
		t.Helper()
		return evalJS[[]string](t, c.ctx, `[...document.querySelectorAll("table.audit tbody tr")].map(tr =>
			[...tr.querySelectorAll("td")].map(td => td.textContent.trim().replace(/\s+/g, " ")).join(" | "))`)
	}

	c.run("audit log",
		chromedp.Click(chromedp.CSS(`nav a[href="/console/audit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`table.audit`)),
	)
	first := rows()
	if len(first) != 50 {
		t.Fatalf("the first page shows %d entries, want 50", len(first))
	}
	want := "key.update | " + k.Key.Hash + " | " + me.Hash + " through PATCH /api/v1/keys/{hash} from 127.0.0.1 | name: renamed 49 → renamed 50"
	if !strings.HasSuffix(first[0], want) {
		t.Errorf("the newest row is %q, want it to end %q", first[0], want)
	}
	c.check("audit-all")
	noSideScroll("the audit log")

	c.run("older entries",
		chromedp.Click(chromedp.CSS(`nav.pager a[rel=next]`)),
		chromedp.WaitVisible(chromedp.CSS(`nav.pager a[href="/console/audit"]`)),
	)
	older := rows()
	if len(older) < 3 {
		t.Fatalf("the second page shows %d entries: %q", len(older), older)
	}
	// Beside the sign-in, the oldest are the gateway's own: the test's
	// first key, made as the CLI makes it, and its default workspace.
	signIn := "console.sign_in | " + me.Hash + " | " + me.Hash + " through console POST /console/sign-in from 127.0.0.1 | —"
	if got := older[len(older)-3]; !strings.HasSuffix(got, signIn) {
		t.Errorf("the third oldest row is %q, want the sign-in", got)
	}
	if got := older[len(older)-1]; !strings.Contains(got, "workspace.create") || !strings.Contains(got, "the gateway through system |") {
		t.Errorf("the oldest row is %q, want the gateway's default workspace", got)
	}
	if strings.Contains(strings.Join(older, "\n"), "renamed 49 → renamed 50") {
		t.Error("the second page repeats an entry of the first")
	}

	c.run("one action",
		chromedp.SetValue(chromedp.CSS(`#audit-action`), "workspace.create"),
		chromedp.Submit(chromedp.CSS(`#audit-action`)),
		chromedp.WaitReady(chromedp.CSS(`#audit-action option[value="workspace.create"][selected]`)),
	)
	only := rows()
	if len(only) != 2 || !strings.Contains(only[0], "| "+me.Hash+" through console POST /console/workspaces from 127.0.0.1 | name: — → Audited") ||
		!strings.Contains(only[1], "workspace.create") {
		t.Errorf("workspace.create only: %q", only)
	}
	c.check("audit")
	noSideScroll("the audit log of one action")
}
