package e2e

// Black-box tests of POST /api/v1/files through real HTTP, against the
// gateway wired by buildApp exactly as in production: the answer and its
// three shapes, the limits and validation rules, workspace scoping, the
// storage quota under concurrency and BYOK providers. Every refusal is
// followed by assertNothingLeft, which looks at every place an upload can
// leave something: the bucket's objects, its pending uploads, the fs root's
// files (temporary ones included), the metadata rows, the quota's stored
// bytes and reservations, and the provider stand-ins' files.

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"maps"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aigateway/gateway/backends/providers/providertest"
	"github.com/aigateway/gateway/backends/sqlstore"
	"github.com/aigateway/gateway/backends/storage"
	"github.com/aigateway/gateway/cmd/gateway/app"
	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/files/blob"
	"github.com/aigateway/gateway/internal/testenv"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver, to count rows on PostgreSQL
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
)

const (
	fileKiB = 1 << 10
	fileMiB = 1 << 20

	fileUploadPath = "/api/v1/files"

	// The spec's message texts the upload answers with.
	fileMsgBadRequest = "Invalid request parameters"
	fileMsgTooLarge   = "Request payload too large"
	fileMsgQuota      = "Workspace storage quota exceeded"
	fileMsgWorkspace  = "Workspace not accessible with this key"
	fileMsgProvider   = "Provider returned error"
	fileMsgUnavail    = "Service temporarily unavailable"

	fileMimeDOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
)

// fileStorage is one native storage backend the upload suites run against.
type fileStorage struct {
	name      string
	configure func(t *testing.T, c *configs.Config)
}

// storageCases lists the fs backend always, and the S3-compatible server and
// the GCS emulator started by `make test` (skipped locally when their
// variables are missing, failed under CI=true).
func storageCases() []fileStorage {
	return []fileStorage{
		{"fs", func(t *testing.T, c *configs.Config) {
			c.Storage.Backend = "fs"
			c.Storage.FS.Dir = filepath.Join(t.TempDir(), "files")
		}},
		{"s3", func(t *testing.T, c *configs.Config) {
			endpoint := testenv.Require(t, testenv.S3EndpointVar)
			fileConfigureS3(t, c, endpoint, testenv.Require(t, testenv.S3AccessKeyVar), testenv.Require(t, testenv.S3SecretKeyVar))
		}},
		{"gcs", func(t *testing.T, c *configs.Config) {
			endpoint := testenv.Require(t, testenv.GCSEndpointVar)
			c.Storage.Backend = "gcs"
			c.Storage.GCS = configs.GCSBucket{Bucket: fileNewGCSBucket(t, endpoint), Endpoint: endpoint}
		}},
	}
}

// fileConfigureS3 points c at a fresh bucket of the S3-compatible server at
// endpoint. Credentials go through the SDK's environment chain, as in
// production: TestMain put the test server's there, for the whole run.
func fileConfigureS3(t *testing.T, c *configs.Config, endpoint, access, secret string) {
	t.Helper()
	if os.Getenv("AWS_ACCESS_KEY_ID") != access || os.Getenv("AWS_SECRET_ACCESS_KEY") != secret {
		t.Fatal("the S3 server's credentials are not the ones TestMain put in the environment")
	}
	c.Storage.Backend = "s3"
	c.Storage.S3 = configs.S3Storage{
		Bucket: fileNewS3Bucket(t, endpoint, access, secret), Region: "us-east-1", Endpoint: endpoint, PathStyle: true,
	}
}

// fileNewS3Bucket creates a bucket of its own for one test.
func fileNewS3Bucket(t *testing.T, endpoint, access, secret string) string {
	t.Helper()
	client := fileS3Client(endpoint, access, secret)
	name := "gw-files-" + fileRandomHex(6)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := client.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("create S3 bucket %s: %v", name, err)
	}
	return name
}

// fileS3Client is a plain SDK client of the S3-compatible server, for what
// the tests do beside the gateway.
func fileS3Client(endpoint, access, secret string) *awss3.Client {
	return awss3.NewFromConfig(aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider(access, secret, ""),
	}, func(o *awss3.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.UsePathStyle = true
	})
}

// fileNewGCSBucket creates a bucket of its own for one test through the
// emulator's JSON API (endpoint ends in /storage/v1/).
func fileNewGCSBucket(t *testing.T, endpoint string) string {
	t.Helper()
	name := "gw-files-" + fileRandomHex(6)
	body := strings.NewReader(`{"name":"` + name + `"}`)
	resp, err := http.Post(strings.TrimSuffix(endpoint, "/")+"/b?project=gateway-test", "application/json", body)
	if err != nil {
		t.Fatalf("create GCS bucket %s: %v", name, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("create GCS bucket %s: %d %s", name, resp.StatusCode, b)
	}
	return name
}

// fileTestCatalog is a one-model catalog: uploads never look at models,
// and loading the shipped catalog would cost seconds per gateway under the
// race detector.
const fileTestCatalog = `models:
  - id: filetest/plain
    canonical_slug: filetest/plain
    name: "Filetest: Plain"
    created: 1767225601
    context_length: null
    pricing: {prompt: "0.000001", completion: "0.000002"}
    architecture: {modality: null, input_modalities: [text], output_modalities: [text]}
    top_provider: {is_moderated: false}
    per_request_limits: null
    supported_parameters: []
    default_parameters: null
    supported_voices: null
`

// fileTestConfig is testConfig with a small catalog, and request rates and
// in-flight caps out of the way, so that only the rule under test can
// refuse an upload.
func fileTestConfig(t *testing.T) configs.Config {
	t.Helper()
	c := testConfig(t)
	c.Catalog.Path = filepath.Join(t.TempDir(), "models.yaml")
	if err := os.WriteFile(c.Catalog.Path, []byte(fileTestCatalog), 0o600); err != nil {
		t.Fatal(err)
	}
	off := false
	c.Limits.Rate.Enabled = &off
	c.Limits.Rate.Default = configs.Rate{Requests: 1_000_000, Per: time.Minute, Burst: 100_000}
	c.Limits.Rate.Files = configs.Rate{Requests: 1_000_000, Per: time.Minute, Burst: 100_000}
	c.Limits.UploadsInFlightPerKey = 256
	return c
}

// fileInspector looks at the gateway's storage and metadata from outside:
// a second handle on the same bucket (opened by the production factory),
// a store and a plain SQL connection on the same database.
type fileInspector struct {
	backend string
	bucket  blob.Bucket
	store   *sqlstore.Store
	db      *sql.DB
	driver  string
	fsDir   string // the fs root, for the fs backend
}

// openFileInspector opens the storage and database cfg names. The database
// must already be migrated (a gateway or a CLI command has opened it).
func openFileInspector(t *testing.T, cfg configs.Config) *fileInspector {
	t.Helper()
	ctx := context.Background()
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	bucket, err := storage.Open(ctx, app.StorageOptions(cfg.Storage), log)
	if err != nil {
		t.Fatalf("open bucket: %v", err)
	}
	t.Cleanup(func() { _ = bucket.Close() })
	in := &fileInspector{backend: cfg.Storage.Backend, bucket: bucket, driver: cfg.Metadata.Driver}
	if cfg.Storage.Backend == "fs" {
		in.fsDir = cfg.Storage.FS.Dir
	}
	return in
}

// openDB connects the inspector to the metadata database.
func (in *fileInspector) openDB(t *testing.T, cfg configs.Config) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, cfg.Metadata.Driver, cfg.Metadata.DSN, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	if err != nil {
		t.Fatalf("open metadata store: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	driver := "sqlite"
	if cfg.Metadata.Driver == "postgres" {
		driver = "pgx"
	}
	db, err := sql.Open(driver, cfg.Metadata.DSN)
	if err != nil {
		t.Fatalf("open metadata database: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	in.store, in.db = st, db
}

// fileEnv is a gateway with its inspector and the provider stand-ins it
// talks to.
type fileEnv struct {
	*fileInspector
	g         *testGateway
	providers []*providertest.Server
}

// newFileEnv starts a gateway on cfg. providers are the stand-ins whose
// files assertNothingLeft counts.
func newFileEnv(t *testing.T, cfg configs.Config, providers ...*providertest.Server) *fileEnv {
	t.Helper()
	in := openFileInspector(t, cfg)
	g := startGateway(t, cfg)
	in.openDB(t, cfg)
	return &fileEnv{fileInspector: in, g: g, providers: providers}
}

// standardKey makes an ordinary key of user and returns it with its
// workspace (the user's default one unless extra names another).
func (e *fileEnv) standardKey(t *testing.T, user string, extra ...string) (key, ws string) {
	t.Helper()
	out, err := e.g.cli(t, "", append([]string{"keys", "create", "--name", "files", "--user", user}, extra...)...)
	if err != nil {
		t.Fatalf("keys create: %v", err)
	}
	return fileParseKeyOutput(t, out)
}

// fileParseKeyOutput reads the secret (last line) and the "workspace:"
// line of `keys create`.
func fileParseKeyOutput(t *testing.T, out string) (key, ws string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		if v, ok := strings.CutPrefix(l, "workspace: "); ok {
			ws = strings.TrimSpace(v)
		}
	}
	if ws == "" {
		t.Fatalf("keys create printed no workspace line:\n%s", out)
	}
	return lines[len(lines)-1], ws
}

// createWorkspace makes a workspace with a management key and returns its id.
func (e *fileEnv) createWorkspace(t *testing.T, mgmtKey, slug string) string {
	t.Helper()
	resp, body := e.g.do(t, "POST", "/api/v1/workspaces", mgmtKey,
		strings.NewReader(`{"name":"`+slug+`","slug":"`+slug+`"}`), http.Header{"Content-Type": {"application/json"}})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create workspace %s = %d %s", slug, resp.StatusCode, body)
	}
	var v struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.Data.ID == "" {
		t.Fatalf("create workspace answer %s: %v", body, err)
	}
	return v.Data.ID
}

// setProviderKey stores a workspace's own key for provider with the CLI.
func (e *fileEnv) setProviderKey(t *testing.T, ws, provider, key string) {
	t.Helper()
	if _, err := e.g.cli(t, key+"\n", "byok", "set", "--workspace", ws, "--provider", provider); err != nil {
		t.Fatalf("byok set %s: %v", provider, err)
	}
}

// filePart is one part of a multipart body.
type filePart struct {
	name        string // form field name
	filename    string // written as filename="..." (escaped) unless noFilename
	noFilename  bool
	disposition string // the whole Content-Disposition, overriding name and filename
	contentType string // of the part; the client's claim, never trusted
	header      map[string]string
	data        []byte
}

// fileForm builds a multipart/form-data body and its Content-Type.
func fileForm(parts ...filePart) (body []byte, contentType string) {
	boundary := "gwtest" + fileRandomHex(12)
	var b bytes.Buffer
	for _, p := range parts {
		fmt.Fprintf(&b, "--%s\r\n", boundary)
		disp := p.disposition
		if disp == "" {
			disp = `form-data; name="` + fileQuote(p.name) + `"`
			if !p.noFilename {
				disp += `; filename="` + fileQuote(p.filename) + `"`
			}
		}
		fmt.Fprintf(&b, "Content-Disposition: %s\r\n", disp)
		if p.contentType != "" {
			fmt.Fprintf(&b, "Content-Type: %s\r\n", p.contentType)
		}
		for k, v := range p.header {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
		b.WriteString("\r\n")
		b.Write(p.data)
		b.WriteString("\r\n")
	}
	fmt.Fprintf(&b, "--%s--\r\n", boundary)
	return b.Bytes(), "multipart/form-data; boundary=" + boundary
}

// fileQuote escapes a quoted-string parameter value as browsers and
// mime/multipart do.
func fileQuote(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}

// fileSingle is a body with a single file part whose declared type is a lie,
// so the answer's mime_type can only come from sniffing.
func fileSingle(filename string, data []byte) filePart {
	return filePart{name: "file", filename: filename, contentType: "application/octet-stream", data: data}
}

// post sends a multipart body to POST /api/v1/files.
func (e *fileEnv) post(t *testing.T, key, query string, header http.Header, body []byte, contentType string) (*http.Response, []byte) {
	t.Helper()
	h := http.Header{"Content-Type": {contentType}}
	for k, vs := range header {
		h[k] = vs
	}
	path := fileUploadPath
	if query != "" {
		path += "?" + query
	}
	return e.g.do(t, "POST", path, key, bytes.NewReader(body), h)
}

// upload sends one file.
func (e *fileEnv) upload(t *testing.T, key, query string, header http.Header, filename string, data []byte) (*http.Response, []byte) {
	t.Helper()
	body, ct := fileForm(fileSingle(filename, data))
	return e.post(t, key, query, header, body, ct)
}

// fileJSON decodes an answer, keeping numbers exact.
func fileJSON(t *testing.T, body []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("answer is not a JSON object: %v\n%s", err, body)
	}
	return m
}

// fileWantUploaded checks a 200 in the service (or anthropic) shape for data
// named filename and returns the file id.
func fileWantUploaded(t *testing.T, resp *http.Response, body []byte, shape, filename string, data []byte, mimeType string) string {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("upload of %q = %d %s, want 200", filename, resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	if resp.Header.Get("X-Request-Id") == "" {
		t.Error("answer has no X-Request-Id")
	}
	m := fileJSON(t, body)
	want := []string{"_shape", "created_at", "downloadable", "filename", "id", "mime_type", "size_bytes", "type"}
	if got := slices.Sorted(maps.Keys(m)); !slices.Equal(got, want) {
		t.Errorf("fields = %v, want %v (the File itself, not wrapped)", got, want)
	}
	checks := map[string]any{
		"_shape": shape, "type": "file", "filename": filename, "mime_type": mimeType,
		"size_bytes": json.Number(strconv.Itoa(len(data))),
	}
	// What GET of the same file says (files.downloadable of the gateway
	// that answered, which the caller checks); a bool either way.
	if _, ok := m["downloadable"].(bool); !ok {
		t.Errorf("downloadable = %#v, want a boolean", m["downloadable"])
	}
	for k, v := range checks {
		if m[k] != v {
			t.Errorf("%s = %#v, want %#v", k, m[k], v)
		}
	}
	id, _ := m["id"].(string)
	if id == "" {
		t.Errorf("id = %#v, want a string", m["id"])
	}
	ts, _ := m["created_at"].(string)
	created, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil || !strings.HasSuffix(ts, "Z") {
		t.Errorf("created_at = %q, want an ISO 8601 UTC timestamp", ts)
	} else if d := time.Since(created); d < -time.Minute || d > time.Minute {
		t.Errorf("created_at = %s, %v away from now", ts, d)
	}
	return id
}

// fileWantRefused checks an error envelope and returns its metadata (nil when
// null).
func fileWantRefused(t *testing.T, resp *http.Response, body []byte, status int, message string) map[string]any {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status = %d %s, want %d", resp.StatusCode, body, status)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	return fileWantEnvelope(t, body, status, message)
}

func fileWantEnvelope(t *testing.T, body []byte, status int, message string) map[string]any {
	t.Helper()
	m := fileJSON(t, body)
	env, ok := m["error"].(map[string]any)
	if !ok {
		t.Fatalf("answer %s is not an error envelope", body)
	}
	if env["code"] != json.Number(strconv.Itoa(status)) {
		t.Errorf("error.code = %v, want %d", env["code"], status)
	}
	if message != "" && env["message"] != message {
		t.Errorf("error.message = %q, want %q", env["message"], message)
	}
	md, _ := env["metadata"].(map[string]any)
	return md
}

// fileMetaNames reports whether a 400's metadata names field, at the top
// level (the typed errors of package files) or under "fields" (the HTTP
// layer's own checks).
func fileMetaNames(md map[string]any, field string) bool {
	if _, ok := md[field]; ok {
		return true
	}
	fields, _ := md["fields"].(map[string]any)
	_, ok := fields[field]
	return ok
}

// fileState is what the gateway has stored, everywhere it stores.
type fileState struct {
	objects       []string // bucket keys
	rows          int      // file records, all workspaces
	stored        int64    // stored bytes, all workspaces
	providerFiles []int    // files held by each provider stand-in
}

func (e *fileEnv) state(t *testing.T) fileState {
	t.Helper()
	s, err := e.readState()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (e *fileEnv) readState() (fileState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var s fileState
	objs, err := e.bucket.List(ctx, "")
	if err != nil {
		return s, fmt.Errorf("list objects: %w", err)
	}
	s.objects = slices.Sorted(slices.Values(objs))
	if err := e.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM files`).Scan(&s.rows); err != nil {
		return s, fmt.Errorf("count file rows: %w", err)
	}
	if err := e.db.QueryRowContext(ctx,
		`SELECT CAST(COALESCE(SUM(stored_bytes), 0) AS BIGINT) FROM workspace_usage`).Scan(&s.stored); err != nil {
		return s, fmt.Errorf("sum stored bytes: %w", err)
	}
	for _, p := range e.providers {
		s.providerFiles = append(s.providerFiles, len(p.Files()))
	}
	return s, nil
}

// leftovers compares the state with before and lists what an upload left
// behind: new objects, rows, stored bytes or provider files, and any
// residue of uploads in flight (reservations, pending multipart uploads,
// temporary files). Stored bytes must also match the rows' sizes.
func (e *fileEnv) leftovers(before fileState) []string {
	var problems []string
	now, err := e.readState()
	if err != nil {
		return []string{err.Error()}
	}
	if !slices.Equal(now.objects, before.objects) {
		problems = append(problems, fmt.Sprintf("objects %v, want %v", now.objects, before.objects))
	}
	if now.rows != before.rows {
		problems = append(problems, fmt.Sprintf("%d file rows, want %d", now.rows, before.rows))
	}
	if now.stored != before.stored {
		problems = append(problems, fmt.Sprintf("stored bytes %d, want %d", now.stored, before.stored))
	}
	if !slices.Equal(now.providerFiles, before.providerFiles) {
		problems = append(problems, fmt.Sprintf("provider files %v, want %v", now.providerFiles, before.providerFiles))
	}
	problems = append(problems, e.residue()...)
	return problems
}

// residue lists what uploads in flight hold, which must be nothing when no
// upload runs.
func (e *fileEnv) residue() []string {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var problems []string
	var reservations int
	if err := e.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM quota_reservations`).Scan(&reservations); err != nil {
		problems = append(problems, "count reservations: "+err.Error())
	} else if reservations != 0 {
		problems = append(problems, fmt.Sprintf("%d quota reservations held", reservations))
	}
	var sizes, stored int64
	if err := e.db.QueryRowContext(ctx, `SELECT CAST(COALESCE(SUM(size), 0) AS BIGINT) FROM files`).Scan(&sizes); err == nil {
		if err := e.db.QueryRowContext(ctx,
			`SELECT CAST(COALESCE(SUM(stored_bytes), 0) AS BIGINT) FROM workspace_usage`).Scan(&stored); err == nil && sizes != stored {
			problems = append(problems, fmt.Sprintf("stored bytes %d differ from the rows' sizes %d", stored, sizes))
		}
	}
	if pl, ok := e.bucket.(blob.Pending); ok {
		pending, err := pl.PendingUploads(ctx)
		switch {
		case err != nil:
			problems = append(problems, "pending uploads: "+err.Error())
		case len(pending) > 0:
			problems = append(problems, fmt.Sprintf("pending uploads %v", pending))
		}
	}
	if e.fsDir != "" {
		// Every regular file under the root must be a listed object: a
		// temporary file anywhere (in .tmp or not) is a leftover.
		// A composed object's segments are files of the directory its
		// link names.
		objs, _ := e.bucket.List(ctx, "")
		segmentDirs := map[string]bool{}
		for _, o := range objs {
			if target, err := os.Readlink(filepath.Join(e.fsDir, filepath.FromSlash(o))); err == nil {
				segmentDirs[path.Join(path.Dir(o), target)] = true
			}
		}
		err := filepath.WalkDir(e.fsDir, func(p string, d iofs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(e.fsDir, p)
			rel = filepath.ToSlash(rel)
			if !slices.Contains(objs, rel) && !segmentDirs[path.Dir(rel)] {
				problems = append(problems, "file left in the fs root: "+rel)
			}
			return nil
		})
		if err != nil {
			problems = append(problems, "walk fs root: "+err.Error())
		}
	}
	return problems
}

// assertNothingLeft fails the test when anything differs from before or an
// upload's residue remains.
func (e *fileEnv) assertNothingLeft(t *testing.T, before fileState) {
	t.Helper()
	for _, p := range e.leftovers(before) {
		t.Errorf("left behind: %s", p)
	}
}

// awaitNothingLeft polls leftovers until there are none, for cleanups that
// finish after the answer (a disconnected client gets none), failing with
// what remains after the deadline.
func (e *fileEnv) awaitNothingLeft(t *testing.T, before fileState, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		problems := e.leftovers(before)
		if len(problems) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range problems {
				t.Errorf("left behind after %v: %s", within, p)
			}
			return
		}
		time.Sleep(50 * time.Millisecond) // poll interval, bounded by the deadline
	}
}

// uploadsFinished counts the upload requests the gateway has finished
// handling (any status), from its metrics: the count moves only after the
// handler, its cleanup included, has returned.
func (e *fileEnv) uploadsFinished(t *testing.T) int {
	t.Helper()
	resp, err := http.Get(e.g.URL + "/metrics")
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	n := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "gateway_http_requests_total{") ||
			!strings.Contains(line, `route="`+fileUploadPath+`"`) || !strings.Contains(line, `method="POST"`) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		n += int(v)
	}
	return n
}

// awaitUploadsFinished waits until n upload requests have finished.
func (e *fileEnv) awaitUploadsFinished(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for e.uploadsFinished(t) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the gateway did not finish upload request %d within 30s", n)
		}
		time.Sleep(20 * time.Millisecond) // poll interval, bounded by the deadline
	}
}

// record returns the metadata row of file id in ws.
func (e *fileEnv) record(t *testing.T, ws, id string) files.Record {
	t.Helper()
	rec, err := e.store.FileByID(context.Background(), ws, id)
	if err != nil {
		t.Fatalf("FileByID(%s, %s): %v", ws, id, err)
	}
	return rec
}

// wantStored checks the row of file id in native storage, and that the
// bucket holds exactly data under the row's key; it returns the key.
func (e *fileEnv) wantStored(t *testing.T, ws, id, filename, mimeType string, data []byte) string {
	t.Helper()
	rec := e.record(t, ws, id)
	sum := fileSHA(data)
	if rec.Size != int64(len(data)) || rec.MimeType != mimeType || rec.Filename != filename ||
		rec.WorkspaceID != ws || rec.Backend != e.backend || rec.KeyID == "" || rec.CreatedAt.IsZero() {
		t.Errorf("record = %+v, want size %d, type %s, filename %q, workspace %s, backend %s, a key id and a time",
			rec, len(data), mimeType, filename, ws, e.backend)
	}
	if base := path.Base(filename); rec.ObjectKey == "" || !strings.Contains(rec.ObjectKey, ws) ||
		(len(base) >= 5 && strings.Contains(rec.ObjectKey, base)) {
		t.Errorf("object key %q: want one made by the gateway under the workspace, not from the filename", rec.ObjectKey)
	}
	rc, err := e.bucket.Open(context.Background(), rec.ObjectKey)
	if err != nil {
		t.Fatalf("open stored object %s: %v", rec.ObjectKey, err)
	}
	defer rc.Close()
	h := sha256.New()
	n, err := io.Copy(h, rc)
	if err != nil {
		t.Fatalf("read stored object: %v", err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sum || n != int64(len(data)) {
		t.Errorf("stored object has %d bytes with sha256 %s, want %d bytes with %s", n, got, len(data), sum)
	}
	return rec.ObjectKey
}

func fileSHA(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func fileRandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Contents of the accepted types, deterministic for a given size.

func filePDF(n int) []byte {
	head := []byte("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
	return append(head, fileNoise(n-len(head), 1)...)
}

func filePNG(n int) []byte {
	head := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x06\x00\x00\x00")
	return append(head, fileNoise(n-len(head), 2)...)
}

func fileText(n int) []byte {
	line := []byte("the quick brown fox jumps over the lazy dog 0123456789\n")
	b := bytes.Repeat(line, n/len(line)+1)
	return b[:n]
}

// fileNoise is n pseudo-random bytes; seeded, so tests are reproducible.
func fileNoise(n int, seed uint64) []byte {
	if n <= 0 {
		return nil
	}
	r := mrand.NewChaCha8([32]byte{byte(seed)})
	b := make([]byte, n)
	_, _ = r.Read(b)
	return b
}

// fileZip is a zip archive of the named entries.
func fileZip(t *testing.T, entries map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, entries[name]); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func fileDOCX(t *testing.T) []byte {
	return fileZip(t, map[string]string{
		"[Content_Types].xml": `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
<Default Extension="xml" ContentType="application/xml"/>
<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>
</Types>`,
		"word/document.xml": `<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>hello</w:t></w:r></w:p></w:body></w:document>`,
	})
}

// TestFileUploadStoresAndAnswers: each accepted type is stored byte for
// byte under a key the gateway made, its row written, and answered with the
// File itself in the negotiated shape, on every storage backend (and on
// PostgreSQL metadata for fs).
func TestFileUploadStoresAndAnswers(t *testing.T) {
	cases := storageCases()
	pg := metadataStores()[1]
	cases = append(cases, fileStorage{"fs-postgres", func(t *testing.T, c *configs.Config) {
		cases[0].configure(t, c)
		pg.configure(t, c)
	}})
	for _, sc := range cases {
		t.Run(sc.name, func(t *testing.T) {
			cfg := fileTestConfig(t)
			sc.configure(t, &cfg)
			e := newFileEnv(t, cfg)
			key, ws := e.standardKey(t, "alice")
			testFileTypesStored(t, e, key, ws)
		})
	}
}

func testFileTypesStored(t *testing.T, e *fileEnv, key, ws string) {
	pdf := filePDF(300 * fileKiB)
	types := []struct {
		filename, mime string
		data           []byte
	}{
		{"report.pdf", "application/pdf", pdf},
		{"picture.png", "image/png", filePNG(40 * fileKiB)},
		{"notes.txt", "text/plain", fileText(100 * fileKiB)},
		{"readme.md", "text/markdown", []byte("# Title\n\nSome *markdown*.\n")},
		{"table.csv", "text/csv", []byte("a,b,c\n1,2,3\n")},
		{"data.json", "application/json", []byte(`{"a": [1, 2, 3]}`)},
		{"letter.docx", fileMimeDOCX, fileDOCX(t)},
		{"a/b/c.txt", "text/plain", []byte("a file in a folder\n")},
		{"x", "text/plain", []byte("x")},
	}
	var total int64
	var keys []string
	for _, tc := range types {
		t.Run(strings.ReplaceAll(tc.filename, "/", "_"), func(t *testing.T) {
			resp, body := e.upload(t, key, "", nil, tc.filename, tc.data)
			id := fileWantUploaded(t, resp, body, "service", tc.filename, tc.data, tc.mime)
			keys = append(keys, e.wantStored(t, ws, id, tc.filename, tc.mime, tc.data))
			total += int64(len(tc.data))
		})
	}

	// The shapes: same status, same file, dressed as the client expects.
	shapes := []struct {
		name   string
		header http.Header
		shape  string
	}{
		{"service", http.Header{"User-Agent": {"curl/8.5.0"}}, "service"},
		{"anthropic", http.Header{"Anthropic-Version": {"2023-06-01"}}, "anthropic"},
		{"openai-user-agent", http.Header{"User-Agent": {"OpenAI/Python 1.52.0"}}, "openai"},
		// X-Stainless-* headers say nothing of the shape (the Anthropic SDKs send them too).
		{"stainless-alone", http.Header{"X-Stainless-Lang": {"python"}, "X-Stainless-Package-Version": {"1.52.0"}}, "service"},
	}
	for _, sh := range shapes {
		t.Run("shape-"+sh.name, func(t *testing.T) {
			resp, body := e.upload(t, key, "", sh.header, "shaped.pdf", pdf)
			var id string
			if sh.shape == "openai" {
				id = fileWantOpenAIShape(t, resp, body, "shaped.pdf", len(pdf))
			} else {
				id = fileWantUploaded(t, resp, body, sh.shape, "shaped.pdf", pdf, "application/pdf")
			}
			keys = append(keys, e.wantStored(t, ws, id, "shaped.pdf", "application/pdf", pdf))
			total += int64(len(pdf))
		})
	}

	stored, err := e.store.StoredBytes(context.Background(), ws)
	if err != nil || stored != total {
		t.Errorf("StoredBytes = %d, %v; want %d", stored, err, total)
	}
	now := e.state(t)
	if want := slices.Sorted(slices.Values(keys)); !slices.Equal(now.objects, want) {
		t.Errorf("bucket holds %v, want exactly %v", now.objects, want)
	}
	for _, p := range e.residue() {
		t.Errorf("left behind: %s", p)
	}
}

// fileWantOpenAIShape checks a 200 in the OpenAI shape and returns the id.
func fileWantOpenAIShape(t *testing.T, resp *http.Response, body []byte, filename string, size int) string {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("upload = %d %s, want 200", resp.StatusCode, body)
	}
	m := fileJSON(t, body)
	want := []string{"_shape", "bytes", "created_at", "filename", "id", "object", "purpose", "status"}
	if got := slices.Sorted(maps.Keys(m)); !slices.Equal(got, want) {
		t.Errorf("openai fields = %v, want %v", got, want)
	}
	checks := map[string]any{
		"_shape": "openai", "object": "file", "filename": filename, "status": "processed",
		"bytes": json.Number(strconv.Itoa(size)),
	}
	for k, v := range checks {
		if m[k] != v {
			t.Errorf("%s = %#v, want %#v", k, m[k], v)
		}
	}
	if p, _ := m["purpose"].(string); p == "" {
		t.Errorf("purpose = %#v, want a string", m["purpose"])
	}
	n, ok := m["created_at"].(json.Number)
	sec, err := n.Int64()
	if !ok || err != nil {
		t.Errorf("created_at = %#v, want Unix seconds", m["created_at"])
	} else if d := time.Since(time.Unix(sec, 0)); d < -time.Minute || d > time.Minute {
		t.Errorf("created_at = %d, %v away from now", sec, d)
	}
	id, _ := m["id"].(string)
	if id == "" {
		t.Errorf("id = %#v, want a string", m["id"])
	}
	return id
}

// fileRefusal is one request the gateway must refuse, leaving nothing.
type fileRefusal struct {
	name    string
	parts   []filePart
	body    []byte // raw body instead of parts
	ctype   string // Content-Type instead of the form's
	query   string
	status  int
	message string
	// metaKey, when set, must be a key of the envelope's metadata.
	metaKey string
}

// TestFileUploadRefusals: every limit and validation rule refuses with its
// status and envelope, and leaves nothing anywhere, on every backend.
func TestFileUploadRefusals(t *testing.T) {
	for _, sc := range storageCases() {
		t.Run(sc.name, func(t *testing.T) {
			cfg := fileTestConfig(t)
			cfg.Limits.MaxFileBytes = fileMiB
			sc.configure(t, &cfg)
			e := newFileEnv(t, cfg)
			key, _ := e.standardKey(t, "alice")
			testFileRefusals(t, e, key)
			testFileDeclaredTooLarge(t, e, key)
			testFileChunkedTooLarge(t, e, key)
			testFileLimitBoundary(t, e, key)
		})
	}
}

func testFileRefusals(t *testing.T, e *fileEnv, key string) {
	small := []byte("hello\n")
	textWithNUL := fileText(300 * fileKiB)
	textWithNUL[200*fileKiB] = 0 // far past the sniffing window: found while streaming
	var fields []filePart
	for i := range 16 {
		fields = append(fields, filePart{name: fmt.Sprintf("field%d", i), noFilename: true, data: []byte("v")})
	}
	cases := []fileRefusal{
		{name: "empty file", parts: []filePart{fileSingle("empty.txt", nil)}, status: 400},
		{name: "no file part", parts: []filePart{{name: "purpose", noFilename: true, data: []byte("user_data")}}, status: 400, metaKey: "file"},
		{name: "no parts at all", parts: nil, status: 400},
		{name: "file part without filename", parts: []filePart{{name: "file", noFilename: true, data: small}}, status: 400},
		{name: "two file parts", parts: []filePart{fileSingle("one.txt", fileText(200*fileKiB)), fileSingle("two.txt", small)}, status: 400, metaKey: "file"},
		{name: "too many parts", parts: append([]filePart{fileSingle("first.txt", fileText(200*fileKiB))}, fields...), status: 400},
		{name: "over-long part headers", parts: []filePart{{name: "file", filename: "h.txt", data: small,
			header: map[string]string{"X-Padding": strings.Repeat("p", 9*fileKiB)}}}, status: 400},
		{name: "not multipart", body: []byte(`{"file":"hello"}`), ctype: "application/json", status: 400},
		{name: "multipart without boundary", body: []byte("--x\r\n"), ctype: "multipart/form-data", status: 400},
		{name: "malformed multipart", body: []byte("this is not a multipart body at all"), ctype: "multipart/form-data; boundary=nothere", status: 400},
		{name: "truncated multipart", body: []byte("--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"t.txt\"\r\n\r\nhello"),
			ctype: "multipart/form-data; boundary=b", status: 400},
		{name: "random bytes", parts: []filePart{fileSingle("noise.bin", append([]byte{0}, fileNoise(100*fileKiB, 7)...))}, status: 400, metaKey: "file"},
		{name: "random bytes named pdf", parts: []filePart{{name: "file", filename: "fake.pdf", contentType: "application/pdf",
			data: append([]byte{0xde, 0xad}, fileNoise(10*fileKiB, 8)...)}}, status: 400, metaKey: "file"},
		{name: "plain zip", parts: []filePart{fileSingle("archive.zip", fileZip(t, map[string]string{"hello.txt": "hello"}))}, status: 400, metaKey: "file"},
		{name: "zip named docx", parts: []filePart{fileSingle("fake.docx", fileZip(t, map[string]string{"hello.txt": "hello"}))}, status: 400, metaKey: "file"},
		{name: "text with a NUL deep inside", parts: []filePart{fileSingle("nul.txt", textWithNUL)}, status: 400, metaKey: "file"},
		{name: "unknown provider", parts: []filePart{fileSingle("p.txt", small)}, query: "provider=gemini", status: 400},
	}
	for _, fn := range []string{
		"/leading.txt", "trailing/", "a//b.txt", "a/../b.txt", "../up.txt", "./here.txt", "a/./b.txt", "..", ".",
		"less<.txt", "more>.txt", "colon:.txt", `quote".txt`, "pipe|.txt", "what?.txt", "star*.txt", `back\slash.txt`,
		strings.Repeat("n", 252) + ".txt", // 256 characters
		strings.Repeat("é", 256),          // 256 characters, 512 bytes
	} {
		cases = append(cases, fileRefusal{name: "filename " + fileShort(fn), parts: []filePart{fileSingle(fn, small)}, status: 400, metaKey: "filename"})
	}
	// Control characters cannot travel raw in a header; RFC 5987 filename*
	// carries them percent-encoded.
	for _, enc := range []string{"a%01b.txt", "tab%09.txt", "new%0Aline.txt", "del%7F.txt", "c1%C2%85.txt"} {
		cases = append(cases, fileRefusal{name: "filename* " + enc, status: 400, metaKey: "filename",
			parts: []filePart{{name: "file", disposition: `form-data; name="file"; filename*=UTF-8''` + enc, data: small}}})
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := e.state(t)
			body, ct := tc.body, tc.ctype
			if body == nil {
				body, ct = fileForm(tc.parts...)
			}
			resp, got := e.post(t, key, tc.query, nil, body, ct)
			msg := tc.message
			if msg == "" && tc.status == 400 {
				msg = fileMsgBadRequest
			}
			md := fileWantRefused(t, resp, got, tc.status, msg)
			if tc.metaKey != "" && !fileMetaNames(md, tc.metaKey) {
				t.Errorf("metadata %v does not name %q", md, tc.metaKey)
			}
			e.assertNothingLeft(t, before)
		})
	}
}

func fileShort(s string) string {
	if len(s) > 24 {
		return fmt.Sprintf("%s…(%d chars)", string([]rune(s)[:8]), len([]rune(s)))
	}
	return strconv.Quote(s)
}

// testFileLimitBoundary: exactly max_file_bytes passes, one more byte is a
// 413 found while streaming; a 255-character name passes.
func testFileLimitBoundary(t *testing.T, e *fileEnv, key string) {
	max := int(e.g.Config.Limits.MaxFileBytes)
	t.Run("exactly max", func(t *testing.T) {
		data := fileText(max)
		resp, body := e.upload(t, key, "", nil, "max.txt", data)
		_ = fileWantUploaded(t, resp, body, "service", "max.txt", data, "text/plain")
	})
	t.Run("max plus one", func(t *testing.T) {
		before := e.state(t)
		resp, body := e.upload(t, key, "", nil, "over.txt", fileText(max+1))
		md := fileWantRefused(t, resp, body, http.StatusRequestEntityTooLarge, fileMsgTooLarge)
		if md["max_file_bytes"] != json.Number(strconv.Itoa(max)) {
			t.Errorf("metadata = %v, want max_file_bytes %d", md, max)
		}
		e.assertNothingLeft(t, before)
	})
	t.Run("255 characters", func(t *testing.T) {
		name := strings.Repeat("é", 251) + ".txt"
		data := []byte("long name\n")
		resp, body := e.upload(t, key, "", nil, name, data)
		_ = fileWantUploaded(t, resp, body, "service", name, data, "text/plain")
	})
}

// fileRawConn dials the test gateway.
func (e *fileEnv) rawConn(t *testing.T) net.Conn {
	t.Helper()
	u, err := url.Parse(e.g.URL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		t.Fatalf("dial gateway: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// fileRequestHead is the head of an upload request; length < 0 means
// chunked.
func fileRequestHead(host, key, query, contentType string, length int64, extra ...string) string {
	path := fileUploadPath
	if query != "" {
		path += "?" + query
	}
	var b strings.Builder
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\n", path, host, key, contentType)
	if length >= 0 {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", length)
	} else {
		b.WriteString("Transfer-Encoding: chunked\r\n")
	}
	for _, h := range extra {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

// testFileDeclaredTooLarge: a Content-Length far above the limit is refused
// from the head alone: no 100 Continue, and the answer comes while the body
// has not been sent.
func testFileDeclaredTooLarge(t *testing.T, e *fileEnv, key string) {
	host := strings.TrimPrefix(e.g.URL, "http://")
	for _, expect := range []bool{true, false} {
		t.Run(fmt.Sprintf("declared length, expect-continue=%v", expect), func(t *testing.T) {
			before := e.state(t)
			conn := e.rawConn(t)
			var extra []string
			if expect {
				extra = append(extra, "Expect: 100-continue")
			}
			_, ct := fileForm()
			head := fileRequestHead(host, key, "", ct, 50*fileMiB, extra...)
			if _, err := io.WriteString(conn, head); err != nil {
				t.Fatal(err)
			}
			if !expect {
				// A first slice of the body; the rest never comes.
				if _, err := conn.Write([]byte("--x\r\n")); err != nil {
					t.Fatal(err)
				}
			}
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer before the body was sent: %v", err)
			}
			defer resp.Body.Close()
			if resp.StatusCode == http.StatusContinue {
				t.Fatal("the gateway sent 100 Continue for a body it must refuse")
			}
			// The answer is whole at once, though the gateway goes on
			// draining the body it refused (a lingering close): a client
			// must not wait for the drain to know it has read it all.
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("the answer did not end while the gateway drained the body: %v", err)
			}
			_ = fileWantRefused(t, resp, body, http.StatusRequestEntityTooLarge, fileMsgTooLarge)
			e.assertNothingLeft(t, before)
		})
	}
}

// testFileChunkedTooLarge: a body of unknown length is cut off with 413 once
// the file passes the limit.
func testFileChunkedTooLarge(t *testing.T, e *fileEnv, key string) {
	t.Run("chunked past the limit", func(t *testing.T) {
		before := e.state(t)
		max := int(e.g.Config.Limits.MaxFileBytes)
		// The body goes out in chunks while the answer is read; the gateway
		// may stop reading (and close) long before the end.
		resp, got := e.chunkedUpload(t, key, "chunked.txt", fileText(3*max))
		_ = fileWantRefused(t, resp, got, http.StatusRequestEntityTooLarge, fileMsgTooLarge)
		e.assertNothingLeft(t, before)
	})
}

// TestFileUploadWorkspaceID: workspace_id must be a UUID (400) of a
// workspace the key may use (403 otherwise); a management key may upload to
// any workspace of its user.
func TestFileUploadWorkspaceID(t *testing.T) {
	cfg := fileTestConfig(t)
	storageCases()[0].configure(t, &cfg)
	e := newFileEnv(t, cfg)
	aliceKey, aliceWS := e.standardKey(t, "alice")
	aliceMgmt := e.g.newKey(t, "alice", "--management")
	second := e.createWorkspace(t, aliceMgmt, "second")
	_, bobWS := e.standardKey(t, "bob")
	data := []byte("scoped\n")

	refusals := []struct {
		name, key, ws string
		status        int
		message       string
	}{
		{"malformed", aliceKey, "not-a-uuid", 400, fileMsgBadRequest},
		{"malformed, management key", aliceMgmt, "1234", 400, fileMsgBadRequest},
		{"uuid without hyphens", aliceKey, strings.ReplaceAll(aliceWS, "-", ""), 400, fileMsgBadRequest},
		{"another user's workspace", aliceMgmt, bobWS, 403, fileMsgWorkspace},
		{"another user's workspace, standard key", aliceKey, bobWS, 403, fileMsgWorkspace},
		{"standard key, another workspace of its user", aliceKey, second, 403, fileMsgWorkspace},
		{"no such workspace", aliceMgmt, "6f1c1f64-3c1e-4f5e-9d9a-0c4b8e2a7d11", 403, fileMsgWorkspace},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			before := e.state(t)
			resp, body := e.upload(t, tc.key, "workspace_id="+url.QueryEscape(tc.ws), nil, "scoped.txt", data)
			_ = fileWantRefused(t, resp, body, tc.status, tc.message)
			e.assertNothingLeft(t, before)
		})
	}

	t.Run("standard key, its own workspace", func(t *testing.T) {
		resp, body := e.upload(t, aliceKey, "workspace_id="+aliceWS, nil, "own.txt", data)
		id := fileWantUploaded(t, resp, body, "service", "own.txt", data, "text/plain")
		e.wantStored(t, aliceWS, id, "own.txt", "text/plain", data)
	})
	t.Run("management key, a workspace of its user", func(t *testing.T) {
		resp, body := e.upload(t, aliceMgmt, "workspace_id="+second, nil, "second.txt", data)
		id := fileWantUploaded(t, resp, body, "service", "second.txt", data, "text/plain")
		e.wantStored(t, second, id, "second.txt", "text/plain", data)
		if _, err := e.store.FileByID(context.Background(), aliceWS, id); !errors.Is(err, files.ErrNotFound) {
			t.Errorf("file %s is visible in the default workspace too: %v", id, err)
		}
		if n, err := e.store.StoredBytes(context.Background(), second); err != nil || n != int64(len(data)) {
			t.Errorf("StoredBytes(second) = %d, %v; want %d", n, err, len(data))
		}
	})
	t.Run("management key, default workspace", func(t *testing.T) {
		resp, body := e.upload(t, aliceMgmt, "", nil, "default.txt", data)
		id := fileWantUploaded(t, resp, body, "service", "default.txt", data, "text/plain")
		e.wantStored(t, aliceWS, id, "default.txt", "text/plain", data)
	})
	t.Run("no key", func(t *testing.T) {
		before := e.state(t)
		resp, body := e.upload(t, "", "", nil, "anon.txt", data)
		_ = fileWantRefused(t, resp, body, http.StatusUnauthorized, "")
		e.assertNothingLeft(t, before)
	})
}

// TestFileUploadQuota: 20 concurrent uploads against a nearly full quota
// never store more than it; the refused ones are 403 envelopes saying so and
// leave nothing. Run on both metadata stores, whose locking differs.
func TestFileUploadQuota(t *testing.T) {
	for _, ms := range metadataStores() {
		t.Run(ms.name, func(t *testing.T) {
			cfg := fileTestConfig(t)
			storageCases()[0].configure(t, &cfg)
			ms.configure(t, &cfg)
			const quota = 3 * fileMiB
			cfg.Limits.MaxFileBytes = fileMiB
			cfg.Limits.WorkspaceStorageBytes = quota
			e := newFileEnv(t, cfg)
			key, ws := e.standardKey(t, "alice")
			ctx := context.Background()

			// Fill to 300 KiB below the quota.
			var filled int64
			for i, size := range []int{fileMiB - fileKiB, fileMiB - fileKiB, fileMiB - 298*fileKiB} {
				data := fileText(size)
				resp, body := e.upload(t, key, "", nil, fmt.Sprintf("fill%d.txt", i), data)
				_ = fileWantUploaded(t, resp, body, "service", fmt.Sprintf("fill%d.txt", i), data, "text/plain")
				filled += int64(size)
			}
			before := e.state(t)

			type result struct {
				size   int
				status int
				body   []byte
				err    error
			}
			results := make([]result, 20)
			var wg sync.WaitGroup
			for i := range results {
				size := (i + 1) * 10 * fileKiB // 10 to 200 KiB: 2100 KiB in all
				results[i].size = size
				body, ct := fileForm(fileSingle(fmt.Sprintf("race%d.txt", i), fileText(size)))
				wg.Go(func() {
					req, _ := http.NewRequest("POST", e.g.URL+fileUploadPath, bytes.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+key)
					req.Header.Set("Content-Type", ct)
					resp, err := e.g.client.Do(req)
					if err != nil {
						results[i].err = err
						return
					}
					defer resp.Body.Close()
					results[i].status = resp.StatusCode
					results[i].body, results[i].err = io.ReadAll(resp.Body)
				})
			}
			wg.Wait()

			accepted, refused := 0, 0
			var acceptedBytes int64
			for i, r := range results {
				switch {
				case r.err != nil:
					t.Errorf("upload %d: %v", i, r.err)
				case r.status == http.StatusOK:
					accepted++
					acceptedBytes += int64(r.size)
				case r.status == http.StatusForbidden:
					refused++
					md := fileWantEnvelope(t, r.body, http.StatusForbidden, fileMsgQuota)
					if md["limit_bytes"] != json.Number(strconv.Itoa(quota)) {
						t.Errorf("quota refusal metadata = %v, want limit_bytes %d", md, quota)
					}
				default:
					t.Errorf("upload %d = %d %s, want 200 or 403", i, r.status, r.body)
				}
			}
			if accepted == 0 || refused == 0 {
				t.Errorf("%d accepted, %d refused: want some of each (300 KiB free, 2100 KiB offered)", accepted, refused)
			}
			stored, err := e.store.StoredBytes(ctx, ws)
			if err != nil {
				t.Fatal(err)
			}
			if stored > quota {
				t.Errorf("StoredBytes = %d, over the quota of %d", stored, quota)
			}
			if stored != filled+acceptedBytes {
				t.Errorf("StoredBytes = %d, want %d filled + %d accepted", stored, filled, acceptedBytes)
			}
			now := e.state(t)
			if len(now.objects) != len(before.objects)+accepted || now.rows != before.rows+accepted {
				t.Errorf("%d objects and %d rows, want %d: refused uploads left something",
					len(now.objects), now.rows, len(before.objects)+accepted)
			}
			var inBucket int64
			for _, k := range now.objects {
				obj, err := e.bucket.Stat(ctx, k)
				if err != nil {
					t.Fatalf("stat %s: %v", k, err)
				}
				inBucket += obj.Size
			}
			if inBucket != stored {
				t.Errorf("the bucket holds %d bytes, the quota counts %d", inBucket, stored)
			}
			for _, p := range e.residue() {
				t.Errorf("left behind: %s", p)
			}

			// A full workspace refuses even a small file, and nothing stays.
			before = e.state(t)
			resp, body := e.upload(t, key, "", nil, "more.txt", fileText(400*fileKiB))
			_ = fileWantRefused(t, resp, body, http.StatusForbidden, fileMsgQuota)
			e.assertNothingLeft(t, before)
		})
	}
}

// fileProvider is a BYOK provider with its stand-in.
type fileProvider struct {
	name string
	key  string
	new  func(testing.TB) *providertest.Server
	set  func(c *configs.Config, s *providertest.Server, timeout time.Duration)
}

func fileProviders() []fileProvider {
	return []fileProvider{
		{"openai", providertest.OpenAIKey, providertest.NewOpenAI, func(c *configs.Config, s *providertest.Server, d time.Duration) {
			c.Providers.OpenAI.BaseURL = s.BaseURL
			if d > 0 {
				c.Providers.OpenAI.Timeout = d
			}
		}},
		{"anthropic", providertest.AnthropicKey, providertest.NewAnthropic, func(c *configs.Config, s *providertest.Server, d time.Duration) {
			c.Providers.Anthropic.BaseURL = s.BaseURL
			if d > 0 {
				c.Providers.Anthropic.Timeout = d
			}
		}},
	}
}

// TestFileUploadBYOK: provider=openai|anthropic streams the file with the
// workspace's own key to the provider, answers with the provider's file id,
// and every failure (no key, provider error, timeout, refused connection,
// over the limit) leaves no row and no provider file.
func TestFileUploadBYOK(t *testing.T) {
	for _, p := range fileProviders() {
		t.Run(p.name, func(t *testing.T) {
			stand := p.new(t)
			other := fileProviders()[0]
			if p.name == other.name {
				other = fileProviders()[1]
			}
			otherStand := other.new(t)
			cfg := fileTestConfig(t)
			storageCases()[0].configure(t, &cfg)
			cfg.Limits.MaxFileBytes = fileMiB
			const timeout = time.Second
			p.set(&cfg, stand, timeout)
			other.set(&cfg, otherStand, 0)
			e := newFileEnv(t, cfg, stand, otherStand)
			key, ws := e.standardKey(t, "alice")
			e.setProviderKey(t, ws, p.name, p.key)
			gatewayKey := key
			q := "provider=" + p.name

			t.Run("stored at the provider", func(t *testing.T) {
				before := e.state(t)
				data := filePDF(700 * fileKiB)
				resp, body := e.upload(t, key, q, nil, "folder/report.pdf", data)
				id := fileWantUploaded(t, resp, body, "service", "folder/report.pdf", data, "application/pdf")
				got := stand.Files()
				if len(got) != 1 || got[0].ID != id {
					t.Fatalf("stand-in holds %+v, want the one file %s", got, id)
				}
				f := got[0]
				if f.SHA256 != fileSHA(data) || f.Size != int64(len(data)) {
					t.Errorf("provider received %d bytes (sha256 %s), want %d (%s)", f.Size, f.SHA256, len(data), fileSHA(data))
				}
				if f.Filename != "folder/report.pdf" || f.ContentType != "application/pdf" {
					t.Errorf("provider got filename %q type %q, want the name sent and the sniffed type", f.Filename, f.ContentType)
				}
				reqs := stand.Requests()
				r := reqs[len(reqs)-1]
				fileWantProviderRequest(t, p.name, p.key, gatewayKey, r)
				if p.name == "openai" && f.Purpose != "user_data" {
					t.Errorf("purpose = %q, want user_data", f.Purpose)
				}
				rec := e.record(t, ws, id)
				if rec.Backend != p.name || rec.ObjectKey != id || rec.Size != int64(len(data)) {
					t.Errorf("record = %+v, want backend %s, the provider's id and size", rec, p.name)
				}
				now := e.state(t)
				if !slices.Equal(now.objects, before.objects) {
					t.Errorf("a BYOK upload put objects in native storage: %v", now.objects)
				}
				if len(otherStand.Requests()) != 0 {
					t.Errorf("the other provider was called")
				}
			})

			refusals := []struct {
				name    string
				query   string
				prepare func()
				data    []byte
				status  []int
				message string
				check   func(t *testing.T, md map[string]any, took time.Duration)
				noAwait bool
			}{
				{name: "no stored key for the provider", query: "provider=" + other.name, data: []byte("x\n"),
					status: []int{400}, message: fileMsgBadRequest,
					check: func(t *testing.T, _ map[string]any, _ time.Duration) {
						if n := len(otherStand.Requests()); n != 0 {
							t.Errorf("%s received %d requests without a key", other.name, n)
						}
					}},
				{name: "unknown provider", query: "provider=" + strings.ToUpper(p.name), data: []byte("x\n"), status: []int{400}, message: fileMsgBadRequest},
				{name: "provider 500", query: q, prepare: func() { stand.FailUploads(500) }, data: filePDF(200 * fileKiB),
					status: []int{502}, message: fileMsgProvider,
					check: func(t *testing.T, md map[string]any, _ time.Duration) {
						reqs := stand.Requests()
						last := reqs[len(reqs)-1]
						if last.Status != 500 || md["provider_request_id"] != last.RequestID || last.RequestID == "" {
							t.Errorf("metadata %v, want provider_request_id %q of the failed request", md, last.RequestID)
						}
					}},
				{name: "provider 429", query: q, prepare: func() { stand.FailUploads(429) }, data: []byte("x\n"),
					status: []int{502}, message: fileMsgProvider},
				{name: "over the limit", query: q, data: fileText(3 * fileMiB / 2), status: []int{413}, message: fileMsgTooLarge,
					check: func(t *testing.T, _ map[string]any, _ time.Duration) {
						reqs := stand.Requests()
						if last := reqs[len(reqs)-1]; last.Complete || last.FileID != "" || last.BodyBytes == 0 {
							t.Errorf("provider request: complete %v, file %q, %d bytes; want an upload begun and cut off",
								last.Complete, last.FileID, last.BodyBytes)
						}
					}},
				{name: "type refused mid-stream", query: q, data: func() []byte {
					b := fileText(500 * fileKiB)
					b[400*fileKiB] = 0
					return b
				}(), status: []int{400}, message: fileMsgBadRequest},
				// Last: the stand-in may not notice that the gateway gave up on
				// a hung request until the test ends, so nothing after it may
				// count on its requests.
				{name: "provider hangs", query: q, prepare: func() { stand.Hang() }, data: filePDF(100 * fileKiB),
					status: []int{502, 504}, noAwait: true,
					check: func(t *testing.T, _ map[string]any, took time.Duration) {
						if took > timeout+5*time.Second {
							t.Errorf("answered after %v, the provider timeout is %v", took, timeout)
						}
					}},
			}
			for _, tc := range refusals {
				t.Run(tc.name, func(t *testing.T) {
					stand.Reset()
					if tc.prepare != nil {
						tc.prepare()
					}
					defer stand.Reset()
					before := e.state(t)
					nreq := len(stand.Requests())
					start := time.Now()
					resp, body := e.upload(t, key, tc.query, nil, "refused.pdf", tc.data)
					took := time.Since(start)
					if !slices.Contains(tc.status, resp.StatusCode) {
						t.Fatalf("status = %d %s, want one of %v", resp.StatusCode, body, tc.status)
					}
					md := fileWantRefused(t, resp, body, resp.StatusCode, tc.message)
					if tc.query == q && resp.StatusCode >= 500 {
						if md["provider"] != p.name {
							t.Errorf("metadata %v does not name the provider", md)
						}
						if strings.Contains(string(body), p.key) {
							t.Error("the answer contains the provider key")
						}
					}
					if tc.query == q && !tc.noAwait {
						// Wait until the stand-in has finished with the request
						// (an aborted body ends on its side after ours).
						stand.AwaitRequests(t, nreq+1)
					}
					if tc.check != nil {
						tc.check(t, md, took)
					}
					e.assertNothingLeft(t, before)
				})
			}

			t.Run("provider unreachable", func(t *testing.T) {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				dead := "http://" + ln.Addr().String()
				ln.Close()
				cfg2 := cfg
				cfg2.Metadata.DSN = filepath.Join(t.TempDir(), "gateway.db")
				cfg2.Storage.FS.Dir = filepath.Join(t.TempDir(), "files")
				if p.name == "openai" {
					cfg2.Providers.OpenAI.BaseURL = dead + "/v1"
				} else {
					cfg2.Providers.Anthropic.BaseURL = dead
				}
				e2 := newFileEnv(t, cfg2)
				key2, ws2 := e2.standardKey(t, "carol")
				e2.setProviderKey(t, ws2, p.name, p.key)
				before := e2.state(t)
				resp, body := e2.upload(t, key2, q, nil, "r.txt", []byte("refused connection\n"))
				if resp.StatusCode != 502 && resp.StatusCode != 504 {
					t.Fatalf("status = %d %s, want 502", resp.StatusCode, body)
				}
				_ = fileWantRefused(t, resp, body, resp.StatusCode, "")
				e2.assertNothingLeft(t, before)
			})
		})
	}
}

// fileWantProviderRequest checks the headers a provider received: its own key
// in its own header, the protocol headers, and never the gateway's key.
func fileWantProviderRequest(t *testing.T, provider, providerKey, gatewayKey string, r providertest.Request) {
	t.Helper()
	if r.Method != "POST" || r.Path != "/v1/files" {
		t.Errorf("provider request %s %s, want POST /v1/files", r.Method, r.Path)
	}
	for name, vs := range r.Header {
		for _, v := range vs {
			if strings.Contains(v, gatewayKey) {
				t.Errorf("the gateway's own key reached the provider in %s", name)
			}
		}
	}
	switch provider {
	case "openai":
		if got := r.Header.Get("Authorization"); got != "Bearer "+providerKey {
			t.Errorf("Authorization = %q, want the workspace's OpenAI key", got)
		}
		if r.Header.Get("X-Api-Key") != "" {
			t.Error("x-api-key sent to OpenAI")
		}
	case "anthropic":
		if got := r.Header.Get("X-Api-Key"); got != providerKey {
			t.Errorf("x-api-key = %q, want the workspace's Anthropic key", got)
		}
		if got := r.Header.Get("Anthropic-Version"); got != "2023-06-01" {
			t.Errorf("anthropic-version = %q", got)
		}
		if got := strings.Join(r.Header.Values("Anthropic-Beta"), ","); !strings.Contains(got, "files-api-2025-04-14") {
			t.Errorf("anthropic-beta = %q, want files-api-2025-04-14", got)
		}
		if r.Header.Get("Authorization") != "" {
			t.Error("an Authorization header was sent to Anthropic")
		}
	}
	if r.FileParts != 1 || !r.Complete {
		t.Errorf("provider request had %d file parts, complete %v", r.FileParts, r.Complete)
	}
}
