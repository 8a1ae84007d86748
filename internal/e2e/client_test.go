package e2e

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/client"
	"github.com/aigateway/gateway/configs"
)

// newClient is a client of g with key, sending through the harness's
// checked transport, so the client's calls are held to the document too.
func (g *testGateway) newClient(t *testing.T, key string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(g.URL, key, append([]client.Option{client.WithHTTPClient(g.client)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// apiError returns err's *client.Error, failing t when there is none.
func apiError(t *testing.T, err error, status int) *client.Error {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) || e.StatusCode != status {
		t.Fatalf("err = %v, want a %d *client.Error", err, status)
	}
	return e
}

func TestClientModels(t *testing.T) {
	g := startGateway(t, testConfig(t))
	c := g.newClient(t, g.newKey(t, "alice"))
	ctx := context.Background()
	m, err := c.GetModel(ctx, "openai/gpt-4o")
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "openai/gpt-4o" || m.Pricing.Prompt == "" || m.Links.Details == "" {
		t.Errorf("model = %+v", m)
	}
	all, err := c.ListModels(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 2 || all[0].ID > all[1].ID {
		t.Errorf("%d models, want several sorted by id", len(all))
	}
	_, err = c.GetModel(client.WithRequestID(ctx, "trace-7"), "openai/no-such-model")
	if e := apiError(t, err, 404); e.RequestID != "trace-7" || e.Message != "Resource not found" {
		t.Errorf("404 = %+v, want the request id sent and the spec's message", e)
	}
	// X-Api-Key is the same key.
	if _, err := g.newClient(t, g.newKey(t, "alice"), client.WithAPIKeyHeader()).GetModel(ctx, "openai/gpt-4o"); err != nil {
		t.Errorf("with X-Api-Key: %v", err)
	}

	// The list's filters, sorts and pages; the count; the per-key list; the
	// endpoints (the shipped catalog declares none).
	text, err := c.CountModels(ctx, client.ModelQuery{})
	if err != nil || text == 0 || text >= len(all) {
		t.Fatalf("count of the text models: %d, %v (of %d)", text, err, len(all))
	}
	page, err := c.QueryModels(ctx, client.ModelQuery{Sort: "context-high-to-low", SupportedParameters: []string{"tools"}, Limit: 5, Offset: 2})
	if err != nil || len(page.Models) != 5 || page.Links.Next == nil || page.Total <= 7 {
		t.Fatalf("a page: %d models of %d, next %v, %v", len(page.Models), page.Total, page.Links.Next, err)
	}
	mine, err := c.ModelsForUser(ctx, client.ModelQuery{})
	if err != nil || mine.Total != text {
		t.Errorf("models for a key without allowlist: %d, %v; want %d", mine.Total, err, text)
	}
	eps, err := c.ModelEndpoints(ctx, "openai/gpt-4o")
	if err != nil || eps == nil || len(eps) != 0 {
		t.Errorf("endpoints: %v, %v; want an empty list", eps, err)
	}
	_, err = c.QueryModels(ctx, client.ModelQuery{Sort: "latency-low-to-high"})
	apiError(t, err, 400)
}

func TestClientWorkspaces(t *testing.T) {
	g := startGateway(t, testConfig(t))
	c := g.newClient(t, g.newKey(t, "alice", "--management"))
	ctx := context.Background()

	w, err := c.CreateWorkspace(ctx, client.WorkspaceCreate{Name: "Research", Slug: "research", Description: ptr("papers")})
	if err != nil {
		t.Fatal(err)
	}
	if w.ID == "" || w.Slug != "research" || w.Description != "papers" || w.UpdatedAt != nil {
		t.Errorf("created %+v", w)
	}
	got, err := c.GetWorkspace(ctx, "research")
	if err != nil || got.ID != w.ID {
		t.Fatalf("get by slug: %+v, %v", got, err)
	}
	up, err := c.UpdateWorkspace(ctx, w.ID, client.WorkspaceUpdate{Name: client.Set("Research 2"), Description: client.Null[string]()})
	if err != nil {
		t.Fatal(err)
	}
	if up.Name != "Research 2" || up.Description != "" || up.Slug != "research" || up.UpdatedAt == nil {
		t.Errorf("updated %+v", up)
	}
	_, err = c.CreateWorkspace(ctx, client.WorkspaceCreate{Name: "Again", Slug: "research"})
	apiError(t, err, 409)
	_, err = c.CreateWorkspace(ctx, client.WorkspaceCreate{Name: "", Slug: "Bad Slug"})
	if e := apiError(t, err, 400); e.Metadata["fields"] == nil {
		t.Errorf("400 metadata = %v, want the fields named", e.Metadata)
	}

	for _, s := range []string{"a", "b", "c", "d"} {
		if _, err := c.CreateWorkspace(ctx, client.WorkspaceCreate{Name: s, Slug: s}); err != nil {
			t.Fatal(err)
		}
	}
	var slugs []string
	for ws, err := range c.Workspaces(ctx, 2) {
		if err != nil {
			t.Fatal(err)
		}
		slugs = append(slugs, ws.Slug)
	}
	// The default workspace was made with the key, before the others.
	if strings.Join(slugs, ",") != "default,research,a,b,c,d" {
		t.Errorf("walked %v, want every workspace oldest first", slugs)
	}

	if err := c.DeleteWorkspace(ctx, "research"); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetWorkspace(ctx, w.ID)
	apiError(t, err, 404)

	// A standard key may not manage workspaces.
	_, err = g.newClient(t, g.newKey(t, "alice")).GetWorkspace(ctx, "a")
	apiError(t, err, 403)
}

// The client waits out a 429's Retry-After on a real gateway and then
// succeeds, and gives up at once when the wait is longer than it may wait.
func TestClientRetriesRateLimit(t *testing.T) {
	cfg := testConfig(t)
	cfg.Limits.Rate.Default = configs.Rate{Requests: 1, Per: time.Second, Burst: 1}
	g := startGateway(t, cfg)
	key := g.newKey(t, "alice")
	ctx := context.Background()

	impatient := g.newClient(t, key, client.WithRetry(client.Retry{MaxAttempts: 3, MaxWait: 10 * time.Millisecond}))
	var limited *client.Error
	for range 10 {
		if _, err := impatient.GetModel(ctx, "openai/gpt-4o"); err != nil {
			limited = apiError(t, err, 429)
			break
		}
	}
	if limited == nil || limited.RetryAfter < time.Second {
		t.Fatalf("no 429 with a Retry-After within 10 calls: %+v", limited)
	}

	patient := g.newClient(t, key, client.WithRetry(client.Retry{MaxAttempts: 5, MaxWait: 5 * time.Second}))
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := patient.GetModel(ctx, "openai/gpt-4o"); err != nil {
		t.Fatalf("after waiting out the limit: %v", err)
	}
}

func TestClientUploads(t *testing.T) {
	cfg := testConfig(t)
	cfg.Limits.MaxFileBytes = 256 << 10
	g := startGateway(t, cfg)
	c := g.newClient(t, g.newKey(t, "alice"))
	ctx := context.Background()
	data := strings.Repeat("a line of text\n", 4096)
	for _, size := range []int64{int64(len(data)), client.UnknownSize} {
		f, err := c.UploadFile(ctx, client.Upload{Filename: "notes.txt", Content: strings.NewReader(data), Size: size, Purpose: "batch"})
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if f.ID == "" || f.SizeBytes != int64(len(data)) || f.Filename != "notes.txt" || !strings.HasPrefix(f.MimeType, "text/plain") {
			t.Errorf("size %d: file %+v", size, f)
		}
	}
	// Far over the limit: the gateway refuses by the declared length.
	big := int64(4 << 20)
	_, err := c.UploadFile(ctx, client.Upload{Filename: "big.txt", Content: io.LimitReader(letters{}, big), Size: big})
	if e := apiError(t, err, http.StatusRequestEntityTooLarge); e.Metadata["max_file_bytes"] == nil {
		t.Errorf("413 metadata = %v", e.Metadata)
	}
	// A bad purpose is the gateway's 400, naming the field.
	_, err = c.UploadFile(ctx, client.Upload{Filename: "a.txt", Content: strings.NewReader("x"), Size: 1, Purpose: "nonsense"})
	apiError(t, err, 400)
}

func ptr[T any](v T) *T { return &v }

// letters reads "a" for ever.
type letters struct{}

func (letters) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

// A component resolves a file id to its bytes with a service key; the
// client pages, reads ranges and deletes on the real routes.
func TestClientFileReads(t *testing.T) {
	g := startGateway(t, testConfig(t))
	ctx := context.Background()
	admin := g.newClient(t, g.newKey(t, "alice", "--management"))
	ws, err := admin.CreateWorkspace(ctx, client.WorkspaceCreate{Name: "Docs", Slug: "docs"})
	if err != nil {
		t.Fatal(err)
	}
	owner := g.newClient(t, g.newKey(t, "alice", "--workspace", "docs"))
	service := g.newClient(t, g.newKey(t, "alice", "--service"))

	var ids []string
	for i := range 5 {
		content := strings.Repeat(string(rune('a'+i)), 100+i)
		f, err := owner.UploadFile(ctx, client.Upload{Filename: "f.txt", Content: strings.NewReader(content), Size: int64(len(content))})
		if err != nil {
			t.Fatal(err)
		}
		ids = append([]string{f.ID}, ids...) // newest first
	}

	var pages, listed []string
	for p, err := range owner.FilePages(ctx, 2) {
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, "page")
		for _, f := range p.Files {
			listed = append(listed, f.ID)
		}
	}
	if len(pages) != 3 || strings.Join(listed, ",") != strings.Join(ids, ",") {
		t.Errorf("%d pages listing %v, want 3 pages listing %v newest first", len(pages), listed, ids)
	}
	listed = nil
	for f, err := range service.Files(ctx, client.InWorkspace(ws.ID)) {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, f.ID)
	}
	if strings.Join(listed, ",") != strings.Join(ids, ",") {
		t.Errorf("the service key lists %v, want %v", listed, ids)
	}

	oldest := ids[len(ids)-1]
	f, err := service.GetFile(ctx, oldest, client.InWorkspace(ws.ID))
	if err != nil || f.SizeBytes != 100 || f.Downloadable {
		t.Fatalf("metadata %+v, %v", f, err)
	}
	// Ordinary keys may not download by default; service keys always may.
	_, err = owner.FileContent(ctx, oldest, nil)
	if e := apiError(t, err, 400); e.Message != "File is not downloadable" {
		t.Errorf("ordinary download: %+v", e)
	}
	c, err := service.FileContent(ctx, oldest, &client.ByteRange{Start: 10, End: 19}, client.InWorkspace(ws.ID))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	c.Close()
	if err != nil || string(b) != strings.Repeat("a", 10) || !c.Partial || c.Start != 10 || c.Total != 100 || c.Filename != "f.txt" {
		t.Errorf("range: %q %v %+v", b, err, c)
	}
	c, err = service.FileContent(ctx, oldest, nil, client.InWorkspace(ws.ID))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(c)
	c.Close()
	if string(b) != strings.Repeat("a", 100) || c.Partial || c.ETag == "" {
		t.Errorf("whole: %q %+v", b, c)
	}
	_, err = service.FileContent(ctx, oldest, &client.ByteRange{Start: 500, End: -1}, client.InWorkspace(ws.ID))
	apiError(t, err, http.StatusRequestedRangeNotSatisfiable)

	// Service keys read, never write.
	_, err = service.UploadFile(ctx, client.Upload{Filename: "x.txt", Content: strings.NewReader("x"), Size: 1}, client.InWorkspace(ws.ID))
	apiError(t, err, http.StatusForbidden)
	apiError(t, service.DeleteFile(ctx, oldest, client.InWorkspace(ws.ID)), http.StatusForbidden)

	if err := owner.DeleteFile(ctx, oldest); err != nil {
		t.Fatal(err)
	}
	_, err = owner.GetFile(ctx, oldest)
	apiError(t, err, http.StatusNotFound)
	apiError(t, owner.DeleteFile(ctx, oldest), http.StatusNotFound)
}
