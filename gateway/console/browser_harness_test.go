package console_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aigateway/gateway/internal/testenv"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// screenshotsVar names a directory to write screenshots of every page into,
// at 360 and 1280 px wide; unset, none are taken.
const screenshotsVar = "CONSOLE_SCREENSHOTS"

// checkedWidths are the viewport widths every page state is checked at: a
// phone's and a laptop's.
var checkedWidths = []int64{360, 1280}

// chrome is a headless Chromium with one tab, driven by a test through the
// console as a person would, that checks each page state it is shown
// (check) against axe-core's accessibility rules.
type chrome struct {
	t   *testing.T
	ctx context.Context
	// axe is the source of axe-core, injected into a page to check it.
	axe   []byte
	shots string
}

// openChrome starts Chromium for t, stopped when t ends. Chromium and
// axe-core come from deploy/testenv (GATEWAY_TEST_CHROMIUM and
// GATEWAY_TEST_AXE): without them the test is skipped, or failed under CI.
// Any JavaScript dialog fails the test: the console opens none, so one
// would come from injected script.
func openChrome(t *testing.T) *chrome {
	t.Helper()
	chromium := testenv.Require(t, testenv.ChromiumVar)
	axe, err := os.ReadFile(testenv.Require(t, testenv.AxeVar))
	if err != nil {
		t.Fatalf("read axe-core: %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox, // the test may run as root, where Chromium's sandbox refuses to start
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancel()
		cancelAlloc()
	})
	c := &chrome{t: t, ctx: ctx, axe: axe, shots: os.Getenv(screenshotsVar)}
	var dialogs atomic.Int32
	dismiss := func(message string) {
		dialogs.Add(1)
		t.Errorf("a JavaScript dialog opened: %q", message)
		// Not from the listener, which must not send commands.
		go func() {
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}()
	}
	if err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			dismiss(ev.Message)
		case page.EventJavascriptDialogOpening:
			dismiss(ev.Message)
		}
	}); err != nil {
		t.Fatalf("start the browser: %v", err)
	}
	return c
}

// run runs steps, failing the test if one fails.
func (c *chrome) run(what string, steps ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	if err := chromedp.Do(c.ctx, steps...); err != nil {
		c.t.Fatalf("%s: %v", what, err)
	}
}

// text is the text of the first element sel matches.
func (c *chrome) text(sel string) string {
	c.t.Helper()
	s, err := chromedp.Run(c.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		c.t.Fatalf("read %s: %v", sel, err)
	}
	return s
}

// check checks the page state shown, named name, at each width: every
// control has a label, and axe-core finds no violation of its rules. With
// CONSOLE_SCREENSHOTS set, it also writes name-WIDTH.png there.
func (c *chrome) check(name string) {
	c.t.Helper()
	for _, width := range checkedWidths {
		c.run("viewport", chromedp.EmulateViewport(width, 800, chromedp.EmulatePortrait))
		at := fmt.Sprintf("%s at %d px", name, width)
		c.labelled(at)
		c.accessible(at)
		if c.shots == "" {
			continue
		}
		png, err := chromedp.Run(c.ctx, chromedp.FullScreenshot(100))
		if err != nil {
			c.t.Fatalf("screenshot %s: %v", at, err)
		}
		if err := os.WriteFile(filepath.Join(c.shots, fmt.Sprintf("%s-%d.png", name, width)), png, 0o644); err != nil {
			c.t.Fatal(err)
		}
	}
	c.run("restore viewport", chromedp.ResetViewport())
}

// labelled fails the test for any visible form control without a label a
// screen reader reads.
func (c *chrome) labelled(at string) {
	c.t.Helper()
	unlabelled, err := chromedp.Run(c.ctx, chromedp.Evaluate[[]string](unlabelledControls))
	if err != nil {
		c.t.Fatalf("%s: find unlabelled controls: %v", at, err)
	}
	if len(unlabelled) > 0 {
		c.t.Errorf("%s: controls without a label: %q", at, unlabelled)
	}
}

// axeViolation is one rule axe-core found broken, with where.
type axeViolation struct {
	ID      string   `json:"id"`
	Impact  string   `json:"impact"`
	Help    string   `json:"help"`
	Targets []string `json:"targets"`
	Summary string   `json:"summary"`
}

// runAxe runs axe-core's rules on the page (those of WCAG 2.x A and AA and
// its best practices: all but the experimental ones) and lists the
// violations, each with the CSS selector of every element that breaks it.
const runAxe = `axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations.map(v => ({
	id: v.id, impact: v.impact || "", help: v.help,
	targets: v.nodes.map(n => n.target.join(" ")),
	summary: v.nodes.length ? v.nodes[0].failureSummary : "",
})))`

// accessible injects axe-core into the page (once per document) and fails
// the test for each violation it finds, naming the rule, its impact and
// the elements.
func (c *chrome) accessible(at string) {
	c.t.Helper()
	loaded, err := chromedp.Run(c.ctx, chromedp.Evaluate[bool](`typeof window.axe === "object"`))
	if err != nil {
		c.t.Fatalf("%s: %v", at, err)
	}
	if !loaded {
		if _, err := chromedp.Run(c.ctx, chromedp.Evaluate[chromedp.Void](string(c.axe)+"\n;undefined")); err != nil {
			c.t.Fatalf("%s: inject axe-core: %v", at, err)
		}
	}
	found, err := chromedp.Run(c.ctx, chromedp.Evaluate[[]axeViolation](runAxe, chromedp.EvalAwaitPromise))
	if err != nil {
		c.t.Fatalf("%s: run axe-core: %v", at, err)
	}
	for _, v := range found {
		c.t.Errorf("%s: axe %s (%s): %s, at %s\n\t%s", at, v.ID, v.Impact, v.Help,
			strings.Join(v.Targets, ", "), strings.ReplaceAll(v.Summary, "\n", "\n\t"))
	}
}

// unlabelledControls lists the visible form controls of the page that have
// no label: no <label> for them, no aria-label, no aria-labelledby.
const unlabelledControls = `[...document.querySelectorAll("input:not([type=hidden]), select, textarea")]
	.filter(e => !(e.labels && e.labels.length) && !e.getAttribute("aria-label") && !e.getAttribute("aria-labelledby"))
	.map(e => e.name || e.id || e.type)`
