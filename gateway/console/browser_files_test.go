package console_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/client"
	"github.com/aigateway/gateway/configs"
	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
)

// TestFilesAndModelsInTheBrowser drives the Files and Models pages in a
// real Chromium as a person does: copy a file's id, select a page of files
// and delete them after the confirmation, walk the pages both ways, search
// the models by name and read a model's description as text.
func TestFilesAndModelsInTheBrowser(t *testing.T) {
	off := false
	g, ws, ids := filesGateway(t, 120, func(c *configs.Config) {
		c.Files.Downloadable = false // the default: the page must not offer what would fail
		c.Limits.Rate.Enabled = &off
	})
	c := openChrome(t)
	api := g.api(t, g.Management)
	js := func(expr string) string {
		t.Helper()
		s, err := chromedp.Run(c.ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("evaluate %s: %v", expr, err)
		}
		return s
	}
	firstRow := func() string { return js(`document.querySelector('input[form=bulk]').value`) }
	fitsAt360 := func(name string) {
		t.Helper()
		c.run("narrow", chromedp.EmulateViewport(360, 800, chromedp.EmulatePortrait))
		if wide := js(`String(document.documentElement.scrollWidth)`); wide != "360" {
			t.Errorf("%s at 360 px is %s px wide: it scrolls sideways", name, wide)
		}
		c.run("restore viewport", chromedp.ResetViewport())
	}

	c.run("sign in",
		chromedp.Navigate(g.URL+"/console/sign-in"),
		chromedp.WaitVisible(chromedp.CSS(`#key`)),
		chromedp.SendKeys(chromedp.CSS(`#key`), g.Management),
		chromedp.Submit(chromedp.CSS(`#key`)),
		chromedp.WaitVisible(chromedp.CSS(`header nav`)),
	)
	c.run("files", chromedp.Navigate(g.URL+"/console/files?workspace="+ws), chromedp.WaitVisible(chromedp.CSS(`#bulk`)))
	if got := c.text(`#files-count`); got != "50 files shown, newest first." {
		t.Errorf("count: %q", got)
	}
	if n := js(`String(document.querySelectorAll('td.actions a[download]').length)`); n != "0" {
		t.Errorf("%s Download links offered where downloads are off", n)
	}
	if hint := c.text(`#download-hint`); !strings.Contains(hint, "files.downloadable: true") {
		t.Errorf("download hint: %q", hint)
	}
	c.check("files-list")
	fitsAt360("files")

	// Copy the first file's id.
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		if _, err := chromedp.CallBrowser(c.ctx, browser.SetPermission, browser.SetPermissionParams{
			Permission: &browser.PermissionDescriptor{Name: name}, Setting: browser.PermissionSettingGranted, Origin: g.URL,
		}); err != nil {
			t.Fatalf("allow %s: %v", name, err)
		}
	}
	c.run("copy id", chromedp.Click(chromedp.CSS(`button.copy-id`)), chromedp.WaitVisible(chromedp.CSS(`button.copy-id`)))
	copied, err := chromedp.Run(c.ctx, chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if copied != ids[0] {
		t.Errorf("copied %q, want the first file's id %s", copied, ids[0])
	}
	if got := c.text(`button.copy-id .copy-label`); got != "Copied" {
		t.Errorf("copy button after copying: %q", got)
	}

	// Select the whole page, one box off (mixed), on again, delete after
	// the confirmation.
	c.run("select all", chromedp.Click(chromedp.CSS(`#select-all`)))
	if got := c.text(`#selected-count`); got != "50 selected" {
		t.Errorf("after select all: %q", got)
	}
	c.run("one off", chromedp.Click(chromedp.CSS(`#pick-3`)))
	if got := js(`String(document.getElementById('select-all').indeterminate) + ' ' + document.getElementById('selected-count').textContent`); got != "true 49 selected" {
		t.Errorf("with one file unticked, select all is %q", got)
	}
	c.run("all again", chromedp.Click(chromedp.CSS(`#select-all`)))
	if got := c.text(`#selected-count`); got != "50 selected" {
		t.Errorf("select all after a mixed state: %q", got)
	}
	c.run("delete selected", chromedp.Click(chromedp.CSS(`button.files-delete`)), chromedp.WaitVisible(chromedp.CSS(`#bulk-yes`)))
	if got := c.text(`main h1`); got != "Delete 50 files?" {
		t.Errorf("confirmation heading: %q", got)
	}
	if n, err := countFiles(api, ws); err != nil || n != 120 {
		t.Fatalf("files before the confirmation: %d, %v", n, err)
	}
	c.check("files-confirm")
	c.run("confirm", chromedp.Click(chromedp.CSS(`#bulk-yes`)), chromedp.WaitVisible(chromedp.CSS(`p.flash`)))
	if got := c.text(`p.flash`); got != "50 files deleted." {
		t.Errorf("after the bulk delete: %q", got)
	}
	if n, err := countFiles(api, ws); err != nil || n != 70 {
		t.Errorf("files after deleting a page: %d, %v", n, err)
	}
	if got := firstRow(); got != ids[50] {
		t.Errorf("first row after the delete: %s, want %s", got, ids[50])
	}
	c.check("files-deleted")

	// Older, then Newer, come back to the same files.
	c.run("older", chromedp.Click(chromedp.CSS(`nav.files-pager a[rel=next]`)), chromedp.WaitVisible(chromedp.CSS(`nav.files-pager a[rel=prev]`)))
	if got := firstRow(); got != ids[100] {
		t.Errorf("older page starts at %s, want %s", got, ids[100])
	}
	c.run("newer", chromedp.Click(chromedp.CSS(`nav.files-pager a[rel=prev]`)), chromedp.WaitVisible(chromedp.CSS(`#bulk`)))
	if got := firstRow(); got != ids[50] {
		t.Errorf("newer page starts at %s, want %s", got, ids[50])
	}

	// Models: a name search, the sorts in words, context and descriptions
	// as text.
	c.run("models", chromedp.Navigate(g.URL+"/console/models"), chromedp.WaitVisible(chromedp.CSS(`#m-q`)))
	if got := js(`document.querySelector('#m-sort option[value="design-arena-elo-high-to-low"]').textContent`); got != "Design Arena Elo, high to low" {
		t.Errorf("the Design Arena sort reads %q", got)
	}
	c.run("search",
		chromedp.SendKeys(chromedp.CSS(`#m-q`), "HAIKU"),
		chromedp.Submit(chromedp.CSS(`#m-q`)),
	)
	// The page before the search has a count too: wait for the search's
	// own. A read may land on the page being replaced, and fail: try again
	// until the deadline.
	for deadline := time.Now().Add(30 * time.Second); ; {
		s, err := chromedp.Run(c.ctx, chromedp.Evaluate[string](`(document.getElementById('models-count') || {textContent: ''}).textContent`))
		if err == nil && strings.Contains(s, "HAIKU") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the search's results did not come: %q, %v", s, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	found := js(`JSON.stringify([...document.querySelectorAll('td.model')].map(td => td.textContent))`)
	if n := strings.Count(found, "haiku"); n < 2 || strings.Contains(found, "gpt-4o") {
		t.Errorf("search for HAIKU lists %s", found)
	}
	if got := c.text(`#models-count`); !strings.Contains(got, "with “HAIKU” in the name or id") {
		t.Errorf("search heading: %q", got)
	}
	contexts := js(`JSON.stringify([...document.querySelectorAll('td.context')].map(td => td.textContent))`)
	if !regexp.MustCompile(`^\["(\d{1,3}(,\d{3})* tokens|—)"(,"(\d{1,3}(,\d{3})* tokens|—)")*\]$`).MatchString(contexts) {
		t.Errorf("context lengths: %s", contexts)
	}
	summaries := js(`JSON.stringify([...document.querySelectorAll('p.model-summary')].map(p => p.textContent))`)
	if strings.Contains(summaries, "](") || strings.Contains(summaries, "**") || !strings.Contains(summaries, "…") {
		t.Errorf("summaries keep Markdown or are not shortened: %s", summaries)
	}
	c.check("models-search")
	fitsAt360("models")

	c.run("model", chromedp.Navigate(g.URL+"/console/models/anthropic/claude-3-haiku"), chromedp.WaitVisible(chromedp.CSS(`.description`)))
	desc := c.text(`.description`)
	if !strings.Contains(desc, "benchmark results here") || strings.Contains(desc, "](") || strings.Contains(desc, "https://www.anthropic.com") {
		t.Errorf("the model's description is not shown as text: %q", desc)
	}
	if got := c.text(`dl.facts dd`); got != "200,000 tokens" {
		t.Errorf("context length on the model's page: %q", got)
	}
	c.check("model")
}

// countFiles is how many files the workspace holds.
func countFiles(api *client.Client, ws string) (int, error) {
	n := 0
	for _, err := range api.Files(context.Background(), client.InWorkspace(ws)) {
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
