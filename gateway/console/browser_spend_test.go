package console_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestSpendPagesInTheBrowser: usage reported with the service key shows on
// the Spend page (the chart, by model, workspace and key, and the
// standing of the budget and the limit) over 30, 90 and 7 days, and on a
// key's activity, opened from the keys page; every state passes axe-core
// at 360 and 1280 px, with no sideways scroll on a phone.
func TestSpendPagesInTheBrowser(t *testing.T) {
	c, g, _ := signedIn(t)
	f := newSpendFixture(t, g)
	today := time.Now().UTC().Format(time.DateOnly)

	// noSideScroll fails the test if the page is wider than a phone.
	noSideScroll := func(at string) {
		t.Helper()
		c.run("viewport", chromedp.EmulateViewport(360, 800, chromedp.EmulatePortrait))
		if wide := evalJS[bool](t, c.ctx, `document.documentElement.scrollWidth > document.documentElement.clientWidth`); wide {
			t.Errorf("%s: the page scrolls sideways at 360 px", at)
		}
		c.run("restore viewport", chromedp.ResetViewport())
	}
	firstRow := func(table string) string {
		t.Helper()
		return evalJS[string](t, c.ctx, `[...document.querySelectorAll(`+jsString("#"+table+" tbody tr:first-child td")+`)].map(td => td.textContent.trim()).join(" | ")`)
	}
	bars := func() (n int, todays string) {
		t.Helper()
		n = evalJS[int](t, c.ctx, `document.querySelectorAll("#spend-chart rect.spend").length`)
		todays = evalJS[string](t, c.ctx, `document.querySelector('#spend-chart g.day[data-date="`+today+`"] rect.spend').dataset.usage`)
		return n, todays
	}

	c.run("spend",
		chromedp.Navigate(g.URL+"/console/files"),
		chromedp.WaitVisible(chromedp.CSS(`nav a[href="/console/spend"]`)),
		chromedp.Click(chromedp.CSS(`nav a[href="/console/spend"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#by-model table`)),
	)
	if n, todays := bars(); n != 30 || todays != "3" {
		t.Errorf("30 days: %d bars, today's of %q; want 30, today's of 3", n, todays)
	}
	for table, want := range map[string]string{
		"by-model":     "openai/gpt-4.1 | $7.25 | $0.00 | 3 | 1,101 | 61 | 0",
		"by-workspace": "Lab | $5.75 | $0.50 | 3 | 108 | 51 | 3",
		"standing":     "Lab | workspace budget | daily | $3.00 | $20.00 | 15\u00a0% 15\u00a0%",
	} {
		if got := firstRow(table); got != want {
			t.Errorf("%s: first row %q, want %q", table, got, want)
		}
	}
	if got := firstRow("by-key"); !strings.HasPrefix(got, "alpha | ") || !strings.HasSuffix(got, " | $8.75") {
		t.Errorf("by key: first row %q", got)
	}
	if got := c.text(`#spend-chart figcaption`); !strings.Contains(got, "today: $3.00") {
		t.Errorf("the chart's summary: %q", got)
	}
	c.check("spend")
	noSideScroll("spend")

	c.run("90 days",
		chromedp.Click(chromedp.CSS(`nav.spans a[href="/console/spend?days=90"]`)),
		chromedp.WaitVisible(chromedp.CSS(`nav.spans a[aria-current=page][href="/console/spend?days=90"]`)),
	)
	if n, todays := bars(); n != 90 || todays != "3" {
		t.Errorf("90 days: %d bars, today's of %q", n, todays)
	}
	if got := firstRow("by-workspace"); got != "Lab | $8.75 | $0.50" {
		t.Errorf("by workspace over 90 days: %q", got)
	}
	c.check("spend-90")
	noSideScroll("spend over 90 days")

	c.run("7 days",
		chromedp.Click(chromedp.CSS(`nav.spans a[href="/console/spend?days=7"]`)),
		chromedp.WaitVisible(chromedp.CSS(`nav.spans a[aria-current=page][href="/console/spend?days=7"]`)),
	)
	if got := firstRow("by-model"); got != "openai/gpt-4.1 | $3.25 | $0.00 | 2 | 1,100 | 60 | 0" {
		t.Errorf("by model over 7 days: %q", got)
	}
	c.check("spend-7")

	c.run("a key's activity",
		chromedp.Navigate(g.URL+"/console/keys"),
		chromedp.WaitVisible(chromedp.CSS(`a[href="/console/keys/`+f.alpha+`/activity"]`)),
		chromedp.Click(chromedp.CSS(`a[href="/console/keys/`+f.alpha+`/activity"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#activity table`)),
	)
	if got := c.text(`#activity-total`); got != "$5.75 over 3 requests" {
		t.Errorf("alpha's activity sums to %q", got)
	}
	if got := firstRow("activity"); !strings.Contains(got, "openai/gpt-4.1 | OpenAI | openai-1 | $1.25") {
		t.Errorf("alpha's activity: first row %q", got)
	}
	if imgs := evalJS[int](t, c.ctx, `document.querySelectorAll("main b, main img").length`); imgs != 0 {
		t.Errorf("a provider's name became markup: %d elements", imgs)
	}
	c.check("key-activity")
	noSideScroll("a key's activity")
}
