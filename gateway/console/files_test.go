package console_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"html"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/client"
	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/policy/keys"
	_ "modernc.org/sqlite"
)

// The Download link is offered only where the API would serve the bytes:
// with files.downloadable off (the default), ordinary and management keys
// get none, and the page says once how an operator turns downloads on.
func TestFilesDownloadLinkOnlyWhereItWorks(t *testing.T) {
	t.Parallel()
	for _, downloadable := range []bool{false, true} {
		t.Run(fmt.Sprintf("downloadable=%v", downloadable), func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t)
			cfg.Files.Downloadable = downloadable
			g := startGateway(t, cfg, true)
			std := g.createKey(t, keys.RoleStandard)
			f, err := g.api(t, std).UploadFile(context.Background(), client.Upload{Filename: "notes.txt", Content: strings.NewReader("hello"), Size: 5})
			if err != nil {
				t.Fatal(err)
			}
			ws := workspaceOf(t, g, std)
			link := "/console/files/" + f.ID + "/content"
			for _, key := range []struct {
				name, secret string
				// always: the key reads any file's bytes (service keys).
				always bool
			}{{"standard", std, false}, {"management", g.Management, false}, {"service", g.createKey(t, keys.RoleService), true}} {
				want := downloadable || key.always
				b := g.browser(t)
				b.signIn(key.secret)
				page := b.get("/console/files?workspace=" + url.QueryEscape(ws))
				if page.StatusCode != http.StatusOK || !strings.Contains(page.Body, f.ID) {
					t.Fatalf("%s: files page = %d without the file:\n%s", key.name, page.StatusCode, page.Body)
				}
				offered := regexp.MustCompile(`href="(` + link + `[^"]*)" download>`).FindStringSubmatch(page.Body)
				hint := strings.Contains(page.Body, `id="download-hint"`)
				if strings.Contains(page.Body, "Per page") {
					t.Errorf("%s key: a single page of one file offers page sizes", key.name)
				}
				if (offered != nil) != want || hint == want {
					t.Errorf("%s key, files.downloadable %v: Download offered %v, hint shown %v", key.name, downloadable, offered != nil, hint)
				}
				// What the link does, or would do, so that the page's promise is
				// checked against the API's rule rather than restating it.
				target := link + "?workspace=" + url.QueryEscape(ws)
				if offered != nil {
					target = html.UnescapeString(offered[1])
				}
				if got := b.get(target); (got.StatusCode == http.StatusOK) != want || want && got.Body != "hello" {
					t.Errorf("%s key, files.downloadable %v: %s answers %d", key.name, downloadable, target, got.StatusCode)
				}
			}
		})
	}
}

// Each row shows the file's id with a copy button wired to it; the page
// says how many files it shows; Older and Newer walk the pages both ways
// and land on the same files; the page size can be raised.
func TestFilesPagesBothWaysWithIDsAndCounts(t *testing.T) {
	t.Parallel()
	g, ws, ids := filesGateway(t, 120, nil)
	b := g.browser(t)
	b.signIn(g.Management)

	first := b.get("/console/files?workspace=" + ws)
	wantRows(t, "first page", first, ids[:50])
	if !strings.Contains(first.Body, "50 files shown") {
		t.Errorf("first page does not say it shows 50 files")
	}
	copyOf := regexp.MustCompile(`<code id="(id-0)">` + ids[0] + `</code> <button type="button" class="copy-id" data-copy="(id-0)"`)
	if m := copyOf.FindStringSubmatch(first.Body); m == nil {
		t.Errorf("the first row has no copy button for its id %s", ids[0])
	}
	if pagerLink(first.Body, "Newer") != "" {
		t.Error("the newest page offers Newer")
	}

	secondURL := pagerLink(first.Body, "Older")
	second := b.get(secondURL)
	wantRows(t, "second page", second, ids[50:100])

	// A file deleted from a later page: back to that page, not the first.
	deleteRow := regexp.MustCompile(`<form method="post" action="([^"]+)">`).FindStringSubmatch(second.Body)
	if deleteRow == nil || !strings.Contains(deleteRow[1], ids[50]) {
		t.Fatalf("no delete form for %s on the second page", ids[50])
	}
	gone := b.post(html.UnescapeString(deleteRow[1]), url.Values{"csrf": {csrfField.FindStringSubmatch(second.Body)[1]}})
	if gone.StatusCode != http.StatusSeeOther || gone.Header.Get("Location") != secondURL {
		t.Fatalf("delete from the second page = %d to %q, want back to %q", gone.StatusCode, gone.Header.Get("Location"), secondURL)
	}
	ids = slices.Delete(ids, 50, 51)
	second = b.get(secondURL)
	wantRows(t, "second page after a delete", second, ids[50:100])
	third := b.get(pagerLink(second.Body, "Older"))
	wantRows(t, "third page", third, ids[100:])
	if !strings.Contains(third.Body, "19 files shown") || pagerLink(third.Body, "Older") != "" {
		t.Errorf("last page: want 19 files shown and no Older link")
	}

	back := b.get(pagerLink(third.Body, "Newer"))
	wantRows(t, "Newer from the third page", back, ids[50:100])
	backAgain := b.get(pagerLink(back.Body, "Newer"))
	wantRows(t, "Newer from there", backAgain, ids[:50])
	if pagerLink(backAgain.Body, "Newer") != "" {
		t.Error("Newer back to the newest files still offers Newer")
	}
	wantRows(t, "Older from a page reached by Newer", b.get(pagerLink(back.Body, "Older")), ids[100:])

	all := b.get("/console/files?per=200&workspace=" + ws)
	wantRows(t, "200 a page", all, ids)
	if !strings.Contains(all.Body, `<strong aria-current="true">200</strong>`) || !strings.Contains(first.Body, `>100</a>`) {
		t.Error("the page sizes are not offered, or the current one is not marked")
	}
	if p := b.get("/console/files?per=7&workspace=" + ws); p.StatusCode != http.StatusBadRequest || !strings.Contains(p.Body, "50, 100 or 200") {
		t.Errorf("per=7 = %d, want 400 saying the sizes", p.StatusCode)
	}
}

// A bulk delete asks first, on a page naming the files, then deletes only
// with the form's token and comes back to the page it started from.
func TestFilesBulkDelete(t *testing.T) {
	t.Parallel()
	off := false
	g, ws, ids := filesGateway(t, 120, func(c *configs.Config) { c.Limits.Rate.Enabled = &off })
	b := g.browser(t)
	b.signIn(g.Management)
	api := g.api(t, g.Management)
	remaining := func() []string {
		t.Helper()
		var out []string
		for f, err := range api.Files(context.Background(), client.InWorkspace(ws)) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, f.ID)
		}
		return out
	}
	picked := []string{ids[0], ids[1], ids[110]}
	q := url.Values{"workspace": {ws}, "per": {"100"}, "do": {"delete"}, "file": picked}
	confirm := b.get("/console/files?" + q.Encode())
	if confirm.StatusCode != http.StatusOK || !strings.Contains(confirm.Body, "<h1>Delete 3 files?</h1>") {
		t.Fatalf("confirmation = %d:\n%s", confirm.StatusCode, confirm.Body)
	}
	for _, want := range []string{"report-" + ids[0] + ".txt", "report-" + ids[1] + ".txt", ids[110] + `</code> <span class="hint">no longer on that page`, "Yes, delete 3 files"} {
		if !strings.Contains(confirm.Body, want) {
			t.Errorf("confirmation page does not show %q", want)
		}
	}
	if n := len(remaining()); n != 120 {
		t.Fatalf("the confirmation page deleted files: %d left", n)
	}
	action := html.UnescapeString(regexp.MustCompile(`<form method="post" action="([^"]+)" class="bulk-confirm-actions">`).FindStringSubmatch(confirm.Body)[1])
	token := csrfField.FindStringSubmatch(confirm.Body)[1]

	// Without the token, whatever the body's encoding: refused, nothing gone.
	for name, p := range map[string]answer{
		"no token":     b.post(action, url.Values{"file": picked}),
		"forged token": b.post(action, url.Values{"file": picked, "csrf": {"forged"}}),
		"multipart":    b.postMultipart(action, url.Values{"file": picked}),
	} {
		if p.StatusCode != http.StatusForbidden {
			t.Errorf("%s: bulk delete = %d, want 403", name, p.StatusCode)
		}
	}
	if n := len(remaining()); n != 120 {
		t.Fatalf("a bulk delete without the token deleted files: %d left", n)
	}

	done := b.post(action, url.Values{"file": picked, "csrf": {token}})
	if done.StatusCode != http.StatusSeeOther || done.Header.Get("Location") != "/console/files?per=100&workspace="+ws {
		t.Fatalf("bulk delete = %d to %q, want 303 back to the page it came from", done.StatusCode, done.Header.Get("Location"))
	}
	if page := b.get(done.Header.Get("Location")); !strings.Contains(page.Body, "3 files deleted.") {
		t.Errorf("after the bulk delete the page does not say so:\n%s", page.Body)
	}
	left := remaining()
	if len(left) != 117 || slices.ContainsFunc(picked, func(id string) bool { return slices.Contains(left, id) }) {
		t.Errorf("after deleting %v: %d files left", picked, len(left))
	}

	// Sent again (a second tab, a reload of the form): gone is what was asked.
	if p := b.post(action, url.Values{"file": picked, "csrf": {token}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("bulk delete again = %d", p.StatusCode)
	}
	if page := b.get("/console/files?workspace=" + ws); !strings.Contains(page.Body, "3 files deleted.") {
		t.Error("a bulk delete of files already gone does not say they are gone")
	}

	// A whole page of 100 at once: the selection a "select all" sends.
	page := b.get("/console/files?per=100&workspace=" + ws)
	onPage := rowIDs(page.Body)
	if len(onPage) != 100 {
		t.Fatalf("a page of 100 shows %d rows", len(onPage))
	}
	if p := b.post(action, url.Values{"file": onPage, "csrf": {token}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("bulk delete of a page = %d", p.StatusCode)
	}
	if left := remaining(); len(left) != 17 {
		t.Errorf("after deleting a page of 100: %d files left, want 17", len(left))
	}
	if p := b.get("/console/files?workspace=" + ws); !strings.Contains(p.Body, "100 files deleted.") {
		t.Error("the page does not say 100 files were deleted")
	}

	// Nothing selected, or more than a page: said in words, nothing deleted.
	if p := b.get("/console/files?do=delete&workspace=" + ws); p.StatusCode != http.StatusOK || !strings.Contains(p.Body, "Select the files to delete first") {
		t.Errorf("confirmation of nothing = %d", p.StatusCode)
	}
	many := make([]string, 201)
	for i := range many {
		many[i] = fmt.Sprintf("file-none-%03d", i)
	}
	if p := b.get("/console/files?" + url.Values{"do": {"delete"}, "workspace": {ws}, "file": many}.Encode()); p.StatusCode != http.StatusBadRequest || !strings.Contains(p.Body, "at most 200") {
		t.Errorf("confirmation of 201 files = %d, want 400", p.StatusCode)
	}
	if p := b.post(action, url.Values{"file": many, "csrf": {token}}); p.StatusCode != http.StatusSeeOther {
		t.Errorf("bulk delete of 201 files = %d, want the redirect with the refusal", p.StatusCode)
	}
	if p := b.get("/console/files?workspace=" + ws); !strings.Contains(p.Body, "Select at most 200 files at a time") {
		t.Error("the refusal of 201 files is not shown")
	}
	if left := remaining(); len(left) != 17 {
		t.Errorf("refused bulk deletes deleted files: %d left", len(left))
	}
}

// Every delete of a bulk delete is an API call counted by the key's rate
// limit: when the limit stops it, the page says how many went and when to
// try again, and exactly those are gone.
func TestFilesBulkDeleteStoppedByTheRateLimit(t *testing.T) {
	t.Parallel()
	g, ws, ids := filesGateway(t, 30, func(c *configs.Config) {
		// A budget of about ten calls that does not refill during the test.
		c.Limits.Rate.Default = configs.Rate{Requests: 1, Per: time.Hour, Burst: 10}
	})
	limited := g.createKey(t, keys.RoleManagement)
	b := g.browser(t)
	b.signIn(limited)
	token := b.csrf("/console/files?workspace=" + ws)
	p := b.post("/console/files/delete?workspace="+ws, url.Values{"file": ids, "csrf": {token}})
	if p.StatusCode != http.StatusSeeOther {
		t.Fatalf("bulk delete = %d:\n%s", p.StatusCode, p.Body)
	}
	// The limited key can show no page now; the outcome waits for the
	// browser's next page, whoever is signed in.
	b.signIn(g.Management)
	page := b.get("/console/files?per=50&workspace=" + ws)
	left := rowIDs(page.Body)
	deleted := len(ids) - len(left)
	if deleted <= 0 || deleted >= len(ids) {
		t.Fatalf("%d of %d deleted: the test's rate limit should stop the bulk delete partway", deleted, len(ids))
	}
	want := fmt.Sprintf("Deleted %d of the 30 files selected.", deleted)
	if !strings.Contains(page.Body, want) || !strings.Contains(page.Body, "Try again in") {
		t.Errorf("after a bulk delete stopped by the rate limit the page does not say %q and when to try again:\n%s", want, page.Body)
	}
}

// filesGateway starts a gateway whose management key has a workspace
// holding n files, written straight into its store (uploading them would
// meet the upload rate limit and test nothing of the pages). ids are the
// files newest first, as the list shows them.
func filesGateway(t *testing.T, n int, adjust func(*configs.Config)) (g *gateway, ws string, ids []string) {
	t.Helper()
	cfg := testConfig(t)
	if adjust != nil {
		adjust(&cfg)
	}
	g = startGateway(t, cfg, true)
	w, err := g.api(t, g.Management).CreateWorkspace(context.Background(), client.WorkspaceCreate{Name: "Files", Slug: "files"})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", cfg.Metadata.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	base := time.Now().Add(-time.Hour).UnixMicro()
	for i := range n {
		id := fmt.Sprintf("file-test-%06d", i)
		if _, err := db.Exec(`INSERT INTO files (id, workspace_id, key_id, filename, mime_type, size, sha256, backend, object_key, purpose, created_at)
			VALUES (?, ?, 'test', ?, 'text/plain', 5, '', 'fs', ?, 'user_data', ?)`, id, w.ID, "report-"+id+".txt", "test/"+id, base+int64(i)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	slices.Reverse(ids)
	return g, w.ID, ids
}

// workspaceOf is the workspace of a standard key.
func workspaceOf(t *testing.T, g *gateway, key string) string {
	t.Helper()
	k, err := g.api(t, key).CurrentKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return k.WorkspaceID
}

var rowID = regexp.MustCompile(`name="file" value="([^"]+)" form="bulk"`)

// rowIDs are the ids of the rows of a files page, in order.
func rowIDs(body string) []string {
	var out []string
	for _, m := range rowID.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

func wantRows(t *testing.T, what string, p answer, want []string) {
	t.Helper()
	if p.StatusCode != http.StatusOK {
		t.Fatalf("%s = %d:\n%s", what, p.StatusCode, p.Body)
	}
	if got := rowIDs(p.Body); !slices.Equal(got, want) {
		t.Fatalf("%s shows %d files %v…, want %d from %s to %s", what, len(got), got[:min(3, len(got))], len(want), want[0], want[len(want)-1])
	}
}

// pagerLink is the address of the pager's link named name ("Newer",
// "Older"), "" without one.
func pagerLink(body, name string) string {
	m := regexp.MustCompile(`<a href="([^"]+)" rel="(?:prev|next)">[^<]*` + name).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// postMultipart posts form as multipart/form-data, from the console's own
// origin.
func (b *visitor) postMultipart(path string, form url.Values) answer {
	b.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for name, values := range form {
		for _, v := range values {
			_ = mw.WriteField(name, v)
		}
	}
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, b.base+path, &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Origin", b.base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return b.do(req)
}
