package console_test

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/aigateway/gateway/client"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/chromedp/chromedp"
)

// signedIn is a browser signed in to a new gateway with its management
// key, on the workspaces page.
func signedIn(t *testing.T) (*chrome, *gateway, *client.Client) {
	t.Helper()
	c := openChrome(t)
	g := startGateway(t, testConfig(t), true)
	c.run("sign in",
		chromedp.Navigate(g.URL+"/console/sign-in"),
		chromedp.WaitVisible(chromedp.CSS(`#key`)),
		chromedp.SendKeys(chromedp.CSS(`#key`), g.Management),
		chromedp.Submit(chromedp.CSS(`#key`)),
		chromedp.WaitVisible(chromedp.CSS(`#ws-name`)),
	)
	return c, g, g.api(t, g.Management)
}

// values are the values of the form controls with ids.
func (c *chrome) values(ids ...string) []string {
	c.t.Helper()
	quoted := make([]string, len(ids))
	for i, id := range ids {
		quoted[i] = jsString(id)
	}
	return evalJS[[]string](c.t, c.ctx, `[`+strings.Join(quoted, ",")+`].map(id => document.getElementById(id).value)`)
}

// refusedField checks that the control id is marked as the one at fault,
// described by the banner, and has the focus.
func (c *chrome) refusedField(id string) {
	c.t.Helper()
	got := evalJS[[]string](c.t, c.ctx, `(e => [e.getAttribute("aria-invalid") || "", e.getAttribute("aria-describedby") || "", document.activeElement.id])(document.getElementById(`+jsString(id)+`))`)
	if got[0] != "true" || !slices.Contains(strings.Fields(got[1]), "flash") || got[2] != id {
		c.t.Errorf("#%s after the refusal: aria-invalid %q, aria-describedby %q, focus on #%s; want true, the banner, and the focus", id, got[0], got[1], got[2])
	}
}

// TestRefusedFormsInTheBrowser: a refused form comes back with what was
// typed (never a secret), the field at fault marked and focused, and a
// message that names it and says what to do.
func TestRefusedFormsInTheBrowser(t *testing.T) {
	c, g, api := signedIn(t)
	ctx := context.Background()
	const flash = `p.flash`

	// A slug that is taken.
	if _, err := api.CreateWorkspace(ctx, client.WorkspaceCreate{Name: "Research", Slug: "research"}); err != nil {
		t.Fatal(err)
	}
	c.run("duplicate slug",
		chromedp.Navigate(g.URL+"/console/workspaces"),
		chromedp.WaitVisible(chromedp.CSS(`#ws-name`)),
		chromedp.SendKeys(chromedp.CSS(`#ws-name`), "Research two"),
		chromedp.SendKeys(chromedp.CSS(`#ws-slug`), "research"),
		chromedp.SendKeys(chromedp.CSS(`#ws-description`), "What we typed"),
		chromedp.Submit(chromedp.CSS(`#ws-name`)),
		chromedp.WaitVisible(chromedp.CSS(`#ws-slug[aria-invalid=true]`)),
	)
	if got, want := c.text(flash), "A workspace with the slug “research” already exists: choose another slug."; got != want {
		t.Errorf("duplicate slug says %q, want %q", got, want)
	}
	if got := c.values("ws-name", "ws-slug", "ws-description"); !slices.Equal(got, []string{"Research two", "research", "What we typed"}) {
		t.Errorf("the form after the refusal holds %q", got)
	}
	c.refusedField("ws-slug")
	c.check("workspaces-error")

	// A budget out of order: the sentence says which limit would do.
	ws, err := api.GetWorkspace(ctx, "research")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.SetBudget(ctx, ws.ID, "monthly", 100, nil); err != nil {
		t.Fatal(err)
	}
	c.run("budget out of order",
		chromedp.Navigate(g.URL+"/console/budgets?workspace="+ws.ID),
		chromedp.WaitVisible(chromedp.CSS(`#budget-limit`)),
		chromedp.SetValue(chromedp.CSS(`#budget-interval`), "daily"),
		chromedp.SendKeys(chromedp.CSS(`#budget-limit`), "500"),
		chromedp.Submit(chromedp.CSS(`#budget-limit`)),
		chromedp.WaitVisible(chromedp.CSS(`#budget-limit[aria-invalid=true]`)),
	)
	want := "The daily budget must be less than the monthly budget: you entered $500.00 and the monthly budget is $100.00. Enter a daily limit below $100.00, or raise the monthly budget first."
	if got := c.text(flash); got != want {
		t.Errorf("budget out of order says %q, want %q", got, want)
	}
	if got := c.values("budget-interval", "budget-limit"); !slices.Equal(got, []string{"daily", "500"}) {
		t.Errorf("the budget form after the refusal holds %q", got)
	}
	c.refusedField("budget-limit")
	c.check("budgets-error")

	// A provider key with an order that is not a number: everything comes
	// back but the secret, which is never written into a page.
	const providerSecret = "sk-typed-into-the-form-0123456789"
	c.run("provider key refused",
		chromedp.Navigate(g.URL+"/console/provider-keys?workspace="+ws.ID),
		chromedp.WaitVisible(chromedp.CSS(`#pk-key`)),
		chromedp.SetValue(chromedp.CSS(`#pk-provider`), "anthropic"),
		chromedp.SendKeys(chromedp.CSS(`#pk-key`), providerSecret),
		chromedp.SendKeys(chromedp.CSS(`#pk-name`), "backup"),
		chromedp.SetValue(chromedp.CSS(`#pk-order`), "first"),
		chromedp.Submit(chromedp.CSS(`#pk-key`)),
		chromedp.WaitVisible(chromedp.CSS(`#pk-order[aria-invalid=true]`)),
	)
	if got := c.text(flash); !strings.HasPrefix(got, "The order must be a whole number") {
		t.Errorf("a bad order says %q", got)
	}
	if got := c.values("pk-provider", "pk-key", "pk-name", "pk-order"); !slices.Equal(got, []string{"anthropic", "", "backup", "first"}) {
		t.Errorf("the provider-key form after the refusal holds %q, want the secret empty", got)
	}
	if evalJS[bool](t, c.ctx, `document.documentElement.outerHTML.includes(`+jsString(providerSecret)+`)`) {
		t.Error("the provider key's secret was written back into the page")
	}
	if got := c.text(`#pk-key-again`); !strings.Contains(got, "enter it again") {
		t.Errorf("no note says the key must be entered again: %q", got)
	}
	c.refusedField("pk-order")
	c.check("provider-keys-error")

	// A workspace that still holds a key: what holds it, and a link there.
	if _, err := api.CreateKey(ctx, client.KeyCreate{Name: "holder", Workspace: ws.ID}); err != nil {
		t.Fatal(err)
	}
	c.run("refused delete",
		chromedp.Navigate(g.URL+"/console/workspaces/research"),
		chromedp.WaitVisible(chromedp.CSS(`#ws-name`)),
		chromedp.Click(chromedp.CSS(`details.destructive summary`)),
		chromedp.Click(chromedp.CSS(`details.destructive button.danger`)),
		chromedp.WaitVisible(chromedp.CSS(flash+` a`)),
	)
	if got := c.text(flash); !strings.HasPrefix(got, "“Research” still holds 1 key, so it cannot be deleted. Delete them first, then delete the workspace:") {
		t.Errorf("the refused delete says %q", got)
	}
	href := evalJS[string](t, c.ctx, `document.querySelector("p.flash a").getAttribute("href")`)
	if want := "/console/keys?workspace=" + url.QueryEscape(ws.ID); href != want {
		t.Errorf("the refused delete links to %q, want %q", href, want)
	}
	c.check("workspace-refused")
	c.run("follow the link",
		chromedp.Click(chromedp.CSS(flash+` a`)),
		chromedp.WaitVisible(chromedp.CSS(`table.keys`)),
	)
	if got := c.text(`table.keys tbody`); !strings.Contains(got, "holder") {
		t.Errorf("the link leads to keys without the one holding the workspace: %q", got)
	}
}

// TestDestructiveStepsInTheBrowser: Disable and Remove ask first, in a
// step of their own, and nothing changes until that is confirmed.
func TestDestructiveStepsInTheBrowser(t *testing.T) {
	c, g, api := signedIn(t)
	ctx := context.Background()
	const flash = `p.flash`
	ws, err := api.CreateWorkspace(ctx, client.WorkspaceCreate{Name: "Ops", Slug: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	spare, err := api.CreateKey(ctx, client.KeyCreate{Name: "spare", Workspace: ws.ID})
	if err != nil {
		t.Fatal(err)
	}
	row := `tr[data-key="` + spare.Key.Hash + `"] `
	c.run("disable, first step",
		chromedp.Navigate(g.URL+"/console/keys?workspace="+ws.ID),
		chromedp.WaitVisible(chromedp.CSS(row+`details.destructive summary`)),
		chromedp.Click(chromedp.CSS(row+`details.destructive summary`)),
		chromedp.WaitVisible(chromedp.CSS(row+`details.destructive button.danger`)),
	)
	if k, err := api.GetKey(ctx, spare.Key.Hash); err != nil || k.Disabled {
		t.Fatalf("the key is disabled before the confirmation: %+v, %v", k, err)
	}
	if got := c.text(row + `details.destructive button.danger`); got != "Yes, disable “spare”" {
		t.Errorf("the confirmation reads %q", got)
	}
	c.check("keys-disable")
	c.run("disable, confirmed",
		chromedp.Click(chromedp.CSS(row+`details.destructive button.danger`)),
		chromedp.WaitVisible(chromedp.CSS(flash)),
	)
	if k, err := api.GetKey(ctx, spare.Key.Hash); err != nil || !k.Disabled {
		t.Errorf("the key is not disabled after the confirmation: %+v, %v", k, err)
	}

	pk, err := api.CreateProviderKey(ctx, client.ProviderKeyCreate{Provider: "openai", Secret: "sk-provider-0123456789", Workspace: ws.ID})
	if err != nil {
		t.Fatal(err)
	}
	prow := `tr[data-provider-key="` + pk.ID + `"] `
	c.run("provider key disable, first step",
		chromedp.Navigate(g.URL+"/console/provider-keys?workspace="+ws.ID),
		chromedp.WaitVisible(chromedp.CSS(prow+`details.destructive summary`)),
		chromedp.Click(chromedp.CSS(prow+`details.destructive summary`)),
		chromedp.WaitVisible(chromedp.CSS(prow+`details.destructive button.danger`)),
	)
	c.check("provider-keys-disable")
	c.run("provider key disable, confirmed",
		chromedp.Click(chromedp.CSS(prow+`details.destructive button.danger`)),
		chromedp.WaitVisible(chromedp.CSS(flash)),
	)
	if got := c.text(flash); got != "Provider key disabled." {
		t.Errorf("after disabling the provider key: %q", got)
	}

	if _, err := api.SetBudget(ctx, ws.ID, "monthly", 100, nil); err != nil {
		t.Fatal(err)
	}
	c.run("remove budget, first step",
		chromedp.Navigate(g.URL+"/console/budgets?workspace="+ws.ID),
		chromedp.WaitVisible(chromedp.CSS(`#budget-monthly details.destructive summary`)),
		chromedp.Click(chromedp.CSS(`#budget-monthly details.destructive summary`)),
		chromedp.WaitVisible(chromedp.CSS(`#budget-monthly button.danger`)),
	)
	if b, _, err := api.Budgets(ctx, ws.ID); err != nil || len(b) != 1 {
		t.Fatalf("the budget is gone before the confirmation: %+v, %v", b, err)
	}
	c.check("budgets-remove")
	c.run("remove budget, confirmed",
		chromedp.Click(chromedp.CSS(`#budget-monthly button.danger`)),
		chromedp.WaitVisible(chromedp.CSS(flash)),
	)
	if got := c.text(flash); got != "The monthly budget is removed." {
		t.Errorf("after removing the budget: %q", got)
	}
	if b, _, err := api.Budgets(ctx, ws.ID); err != nil || len(b) != 0 {
		t.Errorf("budgets after the confirmation: %+v, %v", b, err)
	}
}

// TestBudgetsPageInTheBrowser: meters turn amber from 80 % and red at the
// limit; each figure says whether it counts BYOK spend; the actions cells
// line up with their rows and the chart takes the card's width.
func TestBudgetsPageInTheBrowser(t *testing.T) {
	c, g, api := signedIn(t)
	ctx := context.Background()
	ws, err := api.CreateWorkspace(ctx, client.WorkspaceCreate{Name: "Lab", Slug: "lab"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.SetBudget(ctx, ws.ID, "daily", 20, nil); err != nil {
		t.Fatal(err)
	}
	limited := func(name string, limit float64) string {
		k, err := api.CreateKey(ctx, client.KeyCreate{Name: name, Workspace: ws.ID, Limit: &limit, LimitReset: "daily"})
		if err != nil {
			t.Fatal(err)
		}
		return k.Key.Hash
	}
	half, eighty, full := limited("half", 10), limited("eighty", 5), limited("full", 1)
	service := g.api(t, g.createKey(t, keys.RoleService))
	if _, err := service.ReportUsage(ctx, []client.UsageReport{
		{ID: "half", KeyHash: half, Cost: 5},
		{ID: "eighty", KeyHash: eighty, Cost: 4},
		{ID: "full", KeyHash: full, Cost: 1},
		{ID: "byok", KeyHash: half, Cost: 0.5, BYOK: true},
	}); err != nil {
		t.Fatal(err)
	}
	c.run("budgets",
		chromedp.Navigate(g.URL+"/console/budgets?workspace="+ws.ID),
		chromedp.WaitVisible(chromedp.CSS(`#meter-daily`)),
	)
	// The colour Chromium draws each meter in: 50 % green, 80 % amber,
	// 100 % red.
	names := evalJS[[]string](t, c.ctx, `[...document.querySelectorAll("li.bar meter")].map(m => m.id)`)
	labels := evalJS[[]string](t, c.ctx, `[...document.querySelectorAll("li.bar label strong")].map(s => s.textContent)`)
	want := map[string]string{"daily": "green", "half": "green", "eighty": "amber", "full": "red"}
	if !slices.Equal(labels, []string{"daily", "half", "eighty", "full"}) {
		t.Fatalf("meters labelled %q", labels)
	}
	for i, id := range names {
		if got := c.meterColour("#" + id); got != want[labels[i]] {
			t.Errorf("the meter of %s is drawn %s, want %s", labels[i], got, want[labels[i]])
		}
	}
	// The chart counts BYOK spend, the budget does not: each says so.
	if got := c.text(`#ws-chart figcaption`); !strings.Contains(got, "today: $10.50. These figures include BYOK spend.") {
		t.Errorf("the chart's summary: %q", got)
	}
	if got := c.text(`#budget-daily`); !strings.Contains(got, "$10.00 of $20.00 spent") || !strings.Contains(got, "Excludes BYOK spend, as this workspace's include_byok_in_budgets is off.") {
		t.Errorf("the daily budget: %q", got)
	}
	// The chart fills its card.
	widths := evalJS[[]float64](t, c.ctx, `(f => { const s = getComputedStyle(f); return [f.querySelector("svg").getBoundingClientRect().width, f.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight)] })(document.getElementById("ws-chart"))`)
	if widths[0] < widths[1]-1 || widths[0] <= 760 {
		t.Errorf("at 1280 px the chart is %v px wide in a card of %v px", widths[0], widths[1])
	}
	c.check("budgets-meters")

	// The actions cell is a cell of its row, top to bottom.
	for _, page := range []string{"/console/keys?workspace=" + ws.ID, "/console/provider-keys?workspace=" + ws.ID} {
		if page == "/console/provider-keys?workspace="+ws.ID {
			if _, err := api.CreateProviderKey(ctx, client.ProviderKeyCreate{Provider: "openai", Secret: "sk-provider-0123456789", Workspace: ws.ID}); err != nil {
				t.Fatal(err)
			}
		}
		c.run(page, chromedp.Navigate(g.URL+page), chromedp.WaitVisible(chromedp.CSS(`td.actions`)))
		cells := evalJS[[]string](t, c.ctx, `[...document.querySelectorAll("td.actions")].map(td => {
			const row = td.parentElement.getBoundingClientRect(), cell = td.getBoundingClientRect();
			return getComputedStyle(td).display + " " + Math.round(cell.top - row.top) + " " + Math.round(row.bottom - cell.bottom);
		})`)
		if len(cells) == 0 {
			t.Errorf("%s: no actions cell", page)
		}
		for _, cell := range cells {
			if cell != "table-cell 0 0" {
				t.Errorf("%s: an actions cell is %q, want a table cell flush with its row (\"table-cell 0 0\")", page, cell)
			}
		}
	}
}

// meterColour is the colour Chromium draws the filled part of the meter
// sel in: "green", "amber" or "red" (else its RGB).
func (c *chrome) meterColour(sel string) string {
	c.t.Helper()
	shot, err := chromedp.Run(c.ctx, chromedp.Screenshot(chromedp.CSS(sel)))
	if err != nil {
		c.t.Fatalf("screenshot %s: %v", sel, err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		c.t.Fatal(err)
	}
	// Near the start of the bar, half-way down: filled at any value > 0.
	b := img.Bounds()
	r, g, bl, _ := img.At(b.Min.X+4, (b.Min.Y+b.Max.Y)/2).RGBA()
	r, g, bl = r>>8, g>>8, bl>>8
	switch {
	case g > r && g > bl:
		return "green"
	case r > 150 && g >= 100 && bl < 100:
		return "amber"
	case r > 150 && g < 100 && bl < 100:
		return "red"
	}
	return fmt.Sprintf("rgb(%d, %d, %d)", r, g, bl)
}

// TestFirstRunInTheBrowser: the first-run pages pass the same checks as
// the others.
func TestFirstRunInTheBrowser(t *testing.T) {
	c := openChrome(t)
	g := startGateway(t, testConfig(t), false)
	link := g.app.FirstRunLink(mustURL(t, g.URL).Host)
	if link == "" {
		t.Fatal("no first-run link")
	}
	c.run("first run",
		chromedp.Navigate(link),
		chromedp.WaitVisible(chromedp.CSS(`form button[type=submit]`)),
	)
	c.check("first-run")
	c.run("create the first key",
		chromedp.Click(chromedp.CSS(`form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#new-secret`)),
	)
	c.check("first-run-key")
	c.run("open the console",
		chromedp.Click(chromedp.CSS(`section.secret a`)),
		chromedp.WaitVisible(chromedp.CSS(`.who`)),
	)
	if got := c.text(`.who`); !strings.HasPrefix(got, "Signed in as ") || !strings.Contains(got, "management key") {
		t.Errorf("the header says %q", got)
	}
}
