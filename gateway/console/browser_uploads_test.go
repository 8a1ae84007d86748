package console_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aigateway/gateway/client"
	"github.com/aigateway/gateway/gateway/console"
	"github.com/chromedp/chromedp"
)

// partHook stands between the browser and the console as a flaky network
// and a slow part would: it cuts the connection of every first attempt of
// part cutPart after a little of its body, and holds the first attempt of
// part holdPart until release (so a page state in the middle of an upload
// can be checked). It records every part request the console answered.
type partHook struct {
	next              http.Handler
	cutPart, holdPart string
	partPath          *regexp.Regexp

	mu        sync.Mutex
	hold      chan struct{}
	answered  []partAnswer
	cuts      int
	uploadIDs []string
}

type partAnswer struct {
	part, attempt string
	status        int
}

func newPartHook(next http.Handler) *partHook {
	return &partHook{next: next, cutPart: "2", holdPart: "4", partPath: regexp.MustCompile(`^/console/uploads/([^/]+)/parts$`)}
}

// holdNext makes the hook hold the next upload's part holdPart until the
// function returned is called (also called when the test ends).
func (h *partHook) holdNext(t *testing.T) (release func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := make(chan struct{})
	h.hold = ch
	once := &sync.Once{}
	release = func() { once.Do(func() { close(ch) }) }
	t.Cleanup(release)
	return release
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (h *partHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := h.partPath.FindStringSubmatch(r.URL.Path)
	if m == nil || r.Method != http.MethodPost {
		h.next.ServeHTTP(w, r)
		return
	}
	part, attempt := r.URL.Query().Get("part"), r.URL.Query().Get("attempt")
	h.mu.Lock()
	if len(h.uploadIDs) == 0 || h.uploadIDs[len(h.uploadIDs)-1] != m[1] {
		h.uploadIDs = append(h.uploadIDs, m[1])
	}
	hold := h.hold
	h.mu.Unlock()
	if part == h.cutPart && attempt == "1" {
		// A connection lost mid-part: some bytes arrive, then nothing.
		_, _ = io.CopyN(io.Discard, r.Body, 64<<10)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
		h.mu.Lock()
		h.cuts++
		h.mu.Unlock()
		return
	}
	if part == h.holdPart && attempt == "1" && hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	sw := &statusWriter{ResponseWriter: w}
	h.next.ServeHTTP(sw, r)
	h.mu.Lock()
	h.answered = append(h.answered, partAnswer{part, attempt, sw.status})
	h.mu.Unlock()
}

// TestUploadInPartsInTheBrowser sends files larger than the gateway's
// single-upload limit from the Files page: in parts, a few at once, one
// of them cut off on its first attempt and sent again, with a progress bar
// that counts only the parts the gateway accepted and ends at 100 %; the
// file arrives whole. Cancel cancels the upload on the gateway, and a file
// the gateway refuses at completion is shown in the gateway's words and
// its upload cancelled.
func TestUploadInPartsInTheBrowser(t *testing.T) {
	off := false
	cfg := testConfig(t)
	cfg.Limits.MaxFileBytes = 1 << 20
	cfg.Limits.Rate.Enabled = &off
	g := startGateway(t, cfg, true)
	api := g.api(t, g.Management)
	ctx := context.Background()
	w, err := api.CreateWorkspace(ctx, client.WorkspaceCreate{Name: "Datasets", Slug: "datasets"})
	if err != nil {
		t.Fatal(err)
	}
	ws := w.ID

	// The console as the gateway builds it, told the gateway's limit, with
	// small parts so that a file of a few MiB makes several.
	const partBytes = 512 << 10
	con, err := console.New(console.Options{
		API: g.app.Handler(), SessionKey: []byte("a session key of thirty-two byte"),
		MaxFileBytes: int64(cfg.Limits.MaxFileBytes), UploadPartBytes: partBytes,
	})
	if err != nil {
		t.Fatal(err)
	}
	hook := newPartHook(con)
	srv := httptest.NewServer(hook)
	t.Cleanup(srv.Close)

	// Text, which the gateway accepts; random, so a byte out of place
	// shows; not a whole number of parts, so the last is short.
	raw := make([]byte, (3<<20+12345)/2)
	_, _ = rand.Read(raw)
	content := []byte(hex.EncodeToString(raw))
	total := len(content)
	parts := (total + partBytes - 1) / partBytes
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	c := openChrome(t)
	js := func(expr string) string {
		t.Helper()
		s, err := chromedp.Run(c.ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("evaluate %s: %v", expr, err)
		}
		return s
	}
	// waitFor polls expr in the page until it is true.
	waitFor := func(what, expr string) {
		t.Helper()
		c.run(what, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(60*time.Second)))
	}
	filesURL := srv.URL + "/console/files?workspace=" + ws
	c.run("sign in",
		chromedp.Navigate(srv.URL+"/console/sign-in"),
		chromedp.WaitVisible(chromedp.CSS(`#key`)),
		chromedp.SendKeys(chromedp.CSS(`#key`), g.Management),
		chromedp.Submit(chromedp.CSS(`#key`)),
		chromedp.WaitVisible(chromedp.CSS(`header nav`)),
	)
	// Record every value the bar takes.
	const watchBar = `window.bars = []; new MutationObserver(() => window.bars.push([document.getElementById('upload-progress').value, document.getElementById('upload-progress').max])).observe(document.getElementById('upload-percent'), {childList: true, characterData: true, subtree: true}); undefined`
	start := func(file string) {
		t.Helper()
		c.run("upload "+filepath.Base(file),
			chromedp.Navigate(filesURL),
			chromedp.WaitVisible(chromedp.CSS(`#file`)),
			chromedp.Evaluate[chromedp.Void](watchBar),
			chromedp.SetUploadFiles(chromedp.CSS(`#file`), []string{file}),
			chromedp.Click(chromedp.CSS(`#upload button[type=submit]`)),
		)
	}
	sentText := func(sent int) string {
		return fmt.Sprintf("%s / %s bytes (%d %%)", commas(sent), commas(total), 100*sent/total)
	}
	lastPart := total - (parts-1)*partBytes
	allButHeld := total - partBytes

	// 1. The whole file, part 2 cut off once, part 4 held for a look at
	// the page in the middle of the upload.
	release := hook.holdNext(t)
	start(write("dataset.txt", content))
	waitFor("all parts but the held one", fmt.Sprintf(`document.getElementById('upload-progress').value === %d`, allButHeld))
	if got := c.text(`#upload-percent`); got != sentText(allButHeld) {
		t.Errorf("progress with part 4 held: %q, want %q", got, sentText(allButHeld))
	}
	if hidden := js(`String(document.getElementById('upload-cancel').hidden)`); hidden != "false" {
		t.Error("no Cancel button during an upload in parts")
	}
	c.check("files-upload-parts")
	release()
	c.run("uploaded", chromedp.WaitVisible(chromedp.CSS(`#upload-done`)))
	if got, want := c.text(`#upload-message`), fmt.Sprintf("Uploaded “dataset.txt” (%d bytes).", total); !strings.Contains(got, want) {
		t.Errorf("message after the upload: %q, want %q", got, want)
	}
	if got := c.text(`#upload-percent`); got != sentText(total) {
		t.Errorf("progress after the upload: %q, want %q", got, sentText(total))
	}
	if got := js(`String(document.getElementById('upload-progress').value === document.getElementById('upload-progress').max)`); got != "true" {
		t.Error("the bar does not end full")
	}
	// The bar only ever grew, by a whole part at a time, and never past
	// the file: the cut part's bytes counted once.
	var bars [][2]float64
	if err := json.Unmarshal([]byte(js(`JSON.stringify(window.bars)`)), &bars); err != nil {
		t.Fatal(err)
	}
	prev := 0.0
	for _, b := range bars {
		if b[0] == 0 {
			continue // the bar made ready
		}
		step := b[0] - prev
		if b[1] != float64(total) || b[0] > float64(total) || (step != 0 && step != partBytes && step != float64(lastPart)) {
			t.Errorf("the bar went from %v to %v of %v: not by a part", prev, b[0], b[1])
		}
		prev = b[0]
	}
	hook.mu.Lock()
	cuts, answered := hook.cuts, append([]partAnswer(nil), hook.answered...)
	hook.mu.Unlock()
	if cuts == 0 {
		t.Error("part 2 was never cut off")
	}
	t.Logf("%d parts of %d bytes; part 2 cut off %d times; answers: %+v", parts, partBytes, cuts, answered)
	accepted := map[string]int{}
	for _, a := range answered {
		if a.status == http.StatusOK {
			accepted[a.part]++
		}
		if a.part == "2" && a.attempt == "1" {
			t.Errorf("part 2's first attempt reached the console: %+v", a)
		}
	}
	for n := 1; n <= parts; n++ {
		if got := accepted[fmt.Sprint(n)]; got != 1 {
			t.Errorf("part %d accepted %d times, want once", n, got)
		}
	}
	if !containsAnswer(answered, partAnswer{"2", "2", http.StatusOK}) {
		t.Errorf("part 2 was not sent again after it was cut off: %+v", answered)
	}
	c.check("files-uploaded-parts")
	// The file is whole, byte for byte.
	f := fileNamed(t, api, ws, "dataset.txt")
	if f.SizeBytes != int64(total) {
		t.Errorf("the file has %d bytes, want %d", f.SizeBytes, total)
	}
	got := fileBytes(t, g, f.ID, ws)
	if !bytes.Equal(got, content) {
		t.Errorf("the file read back (%d bytes) differs from the one sent (%d bytes)", len(got), total)
	}

	// 2. Cancel: the upload is cancelled on the gateway, and nothing of it
	// stays.
	release = hook.holdNext(t)
	start(write("cancelled.txt", content))
	waitFor("all parts but the held one", fmt.Sprintf(`document.getElementById('upload-progress').value === %d`, allButHeld))
	id := hook.lastUpload()
	c.run("cancel", chromedp.Click(chromedp.CSS(`#upload-cancel`)), chromedp.WaitVisible(chromedp.CSS(`#upload-message`)))
	if got := c.text(`#upload-message`); got != "Upload cancelled: nothing of “cancelled.txt” was kept." {
		t.Errorf("after Cancel: %q", got)
	}
	release()
	if st := uploadStatus(t, g, id, ws); st != "cancelled" {
		t.Errorf("after Cancel the upload is %q on the gateway, want cancelled", st)
	}

	// 3. A file the gateway refuses at completion (a type it does not
	// take): its message, and the upload cancelled.
	binary := make([]byte, 3*partBytes)
	_, _ = rand.Read(binary)
	binary[0] = 0 // never a recognised signature
	start(write("noise.bin", binary))
	c.run("refused", chromedp.WaitVisible(chromedp.CSS(`#upload-message.error`)))
	msg := c.text(`#upload-message`)
	if msg == "" || js(`document.getElementById('upload-message').getAttribute('role')`) != "alert" {
		t.Errorf("the refusal is not an alert with words: %q", msg)
	}
	t.Logf("refusal shown: %q", msg)
	id = hook.lastUpload()
	if st := uploadStatus(t, g, id, ws); st != "cancelled" {
		t.Errorf("after the refusal (%q) the upload is %q on the gateway, want cancelled", msg, st)
	}
	c.check("files-upload-refused")
	if n, err := countFiles(api, ws); err != nil || n != 1 {
		t.Errorf("files in the workspace: %d, %v; want the one uploaded", n, err)
	}

	// 4. The gateway's own console: a page given a limit above the
	// gateway's sends the file whole, is refused as too large (413) and
	// sends it in parts; a page given the gateway's sends parts at once.
	// Either way the file arrives whole.
	c.run("sign in to the gateway's own console",
		chromedp.Navigate(g.URL+"/console/sign-in"),
		chromedp.WaitVisible(chromedp.CSS(`#key`)),
		chromedp.SendKeys(chromedp.CSS(`#key`), g.Management),
		chromedp.Submit(chromedp.CSS(`#key`)),
		chromedp.WaitVisible(chromedp.CSS(`header nav`)),
		chromedp.Navigate(g.URL+"/console/files?workspace="+ws),
		chromedp.WaitVisible(chromedp.CSS(`#file`)),
		chromedp.SetUploadFiles(chromedp.CSS(`#file`), []string{write("again.txt", content)}),
		chromedp.Click(chromedp.CSS(`#upload button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#upload-message`)),
	)
	if got, want := c.text(`#upload-message`), fmt.Sprintf("Uploaded “again.txt” (%d bytes).", total); !strings.Contains(got, want) {
		t.Errorf("after a single upload refused as too large: %q, want %q", got, want)
	}
	if got := fileBytes(t, g, fileNamed(t, api, ws, "again.txt").ID, ws); !bytes.Equal(got, content) {
		t.Errorf("the file sent in parts after a 413 differs (%d bytes read back)", len(got))
	}
}

func (h *partHook) lastUpload() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.uploadIDs) == 0 {
		return ""
	}
	return h.uploadIDs[len(h.uploadIDs)-1]
}

func containsAnswer(as []partAnswer, want partAnswer) bool {
	for _, a := range as {
		if a == want {
			return true
		}
	}
	return false
}

// commas writes n with thousands separators, as the page does.
func commas(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// fileNamed is the file of the workspace called name.
func fileNamed(t *testing.T, api *client.Client, ws, name string) client.File {
	t.Helper()
	for f, err := range api.Files(context.Background(), client.InWorkspace(ws)) {
		if err != nil {
			t.Fatal(err)
		}
		if f.Filename == name {
			return f
		}
	}
	t.Fatalf("no file %q in the workspace", name)
	return client.File{}
}

// fileBytes reads a file's bytes through the API (the test's
// configuration makes files downloadable).
func fileBytes(t *testing.T, g *gateway, id, ws string) []byte {
	t.Helper()
	content, err := g.api(t, g.Management).FileContent(context.Background(), id, nil, client.InWorkspace(ws))
	if err != nil {
		t.Fatal(err)
	}
	defer content.Close()
	b, err := io.ReadAll(content)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// uploadStatus is the status of the upload id on the gateway.
func uploadStatus(t *testing.T, g *gateway, id, ws string) string {
	t.Helper()
	if id == "" {
		t.Fatal("no upload was seen")
	}
	req, _ := http.NewRequest(http.MethodGet, g.URL+"/api/v1/uploads/"+id+"?workspace_id="+ws, nil)
	req.Header.Set("Authorization", "Bearer "+g.Management)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var up struct {
		Status string `json:"status"`
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the upload: %d", resp.StatusCode)
	}
	decodeJSONReader(t, resp, &up)
	return up.Status
}
