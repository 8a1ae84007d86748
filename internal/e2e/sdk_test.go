package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/internal/testenv"
)

// The official SDKs against the gateway, two ways: TestSDKRequestsReplayed
// replays the requests they send (captured from the npm packages by
// testdata/sdk/capture.mjs) without Node; TestOfficialSDKs runs the SDKs
// themselves when Node and npm are there.

// sdkOps are the file operations every SDK performs, in order, and whether
// this build serves them.
var sdkOps = map[string]bool{
	"upload":   true,
	"list":     true,
	"retrieve": true,
	"download": true,
	"delete":   true,
}

func enabledSDKOps() []string {
	var ops []string
	for _, op := range []string{"upload", "list", "retrieve", "download", "delete"} {
		if sdkOps[op] {
			ops = append(ops, op)
		}
	}
	return ops
}

// sdkConfig is the embedded default, as the README's SDK section runs it,
// with files.downloadable on so the SDKs can read their uploads back.
func sdkConfig(t *testing.T) *testGateway {
	t.Helper()
	cfg := testConfig(t)
	cfg.Files.Downloadable = true
	// The three SDKs share one key, and every file route is in the files
	// class: its default burst of 20 would throttle the walk.
	cfg.Limits.Rate.Files = configs.Rate{Requests: 600, Per: time.Minute, Burst: 100}
	return startGateway(t, cfg)
}

// field kinds of the SDKs' schemas.
const (
	kString = "string"
	kInt    = "integer"
	kBool   = "boolean"
	kTime   = "RFC 3339 time"
	kID     = "string or null"
)

// schema is what an SDK requires of an answer: each field's kind, or an
// exact value ("=file").
type schema map[string]string

// The file objects as each SDK declares them (required fields and types):
// openai FileObject, @anthropic-ai/sdk BetaFileMetadata, and the service
// SDK's file (OpenRouterFile in @openrouter/sdk, whose _shape value is the
// original service's name where ours says "service").
var (
	openAIFileSchema = schema{"_shape": "=openai", "id": kString, "object": "=file", "bytes": kInt,
		"created_at": kInt, "filename": kString, "purpose": kString, "status": "=processed"}
	anthropicFileSchema = schema{"_shape": "=anthropic", "id": kString, "type": "=file", "filename": kString,
		"mime_type": kString, "size_bytes": kInt, "created_at": kTime, "downloadable": kBool}
	serviceFileSchema = schema{"_shape": "=service", "id": kString, "type": "=file", "filename": kString,
		"mime_type": kString, "size_bytes": kInt, "created_at": kTime, "downloadable": kBool}
)

// sdkSchemas: the answer of each operation, by SDK.
var sdkSchemas = map[string]struct {
	file, list, deleted schema
}{
	"openai": {openAIFileSchema,
		schema{"_shape": "=openai", "object": "=list", "has_more": kBool, "first_id": kID, "last_id": kID},
		schema{"_shape": "=openai", "id": kString, "object": "=file", "deleted": "=true"}},
	"anthropic": {anthropicFileSchema,
		schema{"_shape": "=anthropic", "has_more": kBool, "first_id": kID, "last_id": kID},
		schema{"_shape": "=anthropic", "id": kString, "type": "=file_deleted"}},
	"openrouter": {serviceFileSchema,
		schema{"_shape": "=service", "has_more": kBool, "first_id": kID, "last_id": kID, "cursor": kID},
		schema{"_shape": "=service", "id": kString, "type": "=file_deleted"}},
}

// checkSchema reports every field of v that s requires and v lacks or
// holds with the wrong type.
func checkSchema(v any, s schema) []string {
	m, ok := v.(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("not an object: %v", v)}
	}
	var bad []string
	for name, kind := range s {
		got, present := m[name]
		ok := present
		switch {
		case !present:
		case strings.HasPrefix(kind, "="):
			ok = fmt.Sprint(got) == kind[1:]
		case kind == kString:
			_, ok = got.(string)
		case kind == kID:
			_, isString := got.(string)
			ok = isString || got == nil
		case kind == kBool:
			_, ok = got.(bool)
		case kind == kInt:
			f, isNum := got.(float64)
			ok = isNum && f == float64(int64(f))
		case kind == kTime:
			s, _ := got.(string)
			_, err := time.Parse(time.RFC3339Nano, s)
			ok = err == nil
		}
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: want %s, got %#v", name, kind, got))
		}
	}
	slices.Sort(bad)
	return bad
}

// checkAnswer checks one operation's answer against the SDK's schema.
func checkAnswer(t *testing.T, sdk, op string, v any) {
	t.Helper()
	sc := sdkSchemas[sdk]
	var bad []string
	switch op {
	case "upload", "retrieve":
		bad = checkSchema(v, sc.file)
	case "delete":
		bad = checkSchema(v, sc.deleted)
	case "list":
		bad = checkSchema(v, sc.list)
		data, _ := v.(map[string]any)["data"].([]any)
		for i, f := range data {
			for _, b := range checkSchema(f, sc.file) {
				bad = append(bad, fmt.Sprintf("data[%d].%s", i, b))
			}
		}
	}
	for _, b := range bad {
		t.Errorf("%s %s answer breaks the SDK's schema: %s", sdk, op, b)
	}
}

// capturedRequest is one request an SDK sent (testdata/sdk/requests).
type capturedRequest struct {
	Op      string            `json:"op"`
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Query   string            `json:"query"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

func loadCaptured(t *testing.T, sdk string) []capturedRequest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "sdk", "requests", sdk+"-node.json"))
	if err != nil {
		t.Fatal(err)
	}
	var reqs []capturedRequest
	if err := json.Unmarshal(data, &reqs); err != nil {
		t.Fatal(err)
	}
	return reqs
}

// TestSDKRequestsReplayed sends the gateway exactly what each SDK sent to
// the recorder (method, path, query, headers, multipart body byte for
// byte, the key swapped in), and checks each answer against the SDK's
// schema. The recorder's file ids and page cursors are replaced by the
// gateway's own as they come back.
func TestSDKRequestsReplayed(t *testing.T) {
	g := sdkConfig(t)
	key := g.newKey(t, "sdk-replay")
	for sdk := range sdkSchemas {
		t.Run(sdk, func(t *testing.T) {
			ids := map[string]string{} // recorder's id -> gateway's
			cursor := ""               // the gateway's next-page token
			uploads := 0
			for i, c := range loadCaptured(t, sdk) {
				if !sdkOps[c.Op] {
					continue
				}
				// One pass over all ids: a gateway id may itself start
				// like a recorder's ("file-3…"), so replacing one id after
				// another could rewrite an id already put in.
				var pairs []string
				for from, to := range ids {
					pairs = append(pairs, "/"+from, "/"+to, "="+from, "="+to)
				}
				swap := strings.NewReplacer(pairs...)
				path, query := swap.Replace(c.Path), swap.Replace(c.Query)
				query = strings.ReplaceAll(query, "=page-2", "="+cursor)
				url := g.URL + path
				if query != "" {
					url += "?" + query
				}
				req, err := http.NewRequest(c.Method, url, strings.NewReader(c.Body))
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range c.Headers {
					switch strings.ToLower(k) {
					case "host", "content-length", "connection":
						continue
					}
					req.Header.Set(k, strings.ReplaceAll(v, "{key}", key))
				}
				resp, err := g.client.Do(req)
				if err != nil {
					t.Fatalf("request %d (%s): %v", i, c.Op, err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("request %d (%s %s %s): %d %s", i, c.Op, c.Method, c.Path, resp.StatusCode, body)
				}
				if c.Op == "download" {
					continue // the content, checked by TestOfficialSDKs
				}
				var v map[string]any
				if err := json.Unmarshal(body, &v); err != nil {
					t.Fatalf("request %d (%s): answer is not JSON: %s", i, c.Op, body)
				}
				checkAnswer(t, sdk, c.Op, v)
				switch c.Op {
				case "upload":
					uploads++
					id, _ := v["id"].(string)
					ids[fmt.Sprintf("file-%d", uploads)] = id
					if sdk == "openai" && v["purpose"] != "assistants" {
						t.Errorf("purpose %v, want the form's assistants", v["purpose"])
					}
				case "list":
					cursor = fmt.Sprint(v["last_id"])
					if s, ok := v["cursor"].(string); ok {
						cursor = s
					}
					if s, ok := v["next_page"].(string); ok {
						cursor = s
					}
				}
			}
			if uploads != 3 {
				t.Errorf("%d uploads replayed, want 3", uploads)
			}
		})
	}
}

// sdkNode is a directory with the SDKs of testdata/sdk/package.json
// installed, under .testenv/ so the install runs once. Without node or npm,
// or when the install fails (no registry), the test is skipped, or failed
// under CI=true.
func sdkNode(t *testing.T) (node, dir string) {
	t.Helper()
	need := func(format string, args ...any) {
		t.Helper()
		if testenv.InCI() {
			t.Fatalf(format, args...)
		}
		t.Skipf(format, args...)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		need("node is not installed: %v", err)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		need("npm is not installed: %v", err)
	}
	pkg, err := os.ReadFile(filepath.Join("testdata", "sdk", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	lock, err := os.ReadFile(filepath.Join("testdata", "sdk", "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append(pkg, lock...))
	dir, err = filepath.Abs(filepath.Join("..", "..", ".testenv", "sdk-node"))
	if err != nil {
		t.Fatal(err)
	}
	stamp := filepath.Join(dir, "installed.sha256")
	if got, _ := os.ReadFile(stamp); string(got) != hex.EncodeToString(sum[:]) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range map[string][]byte{"package.json": pkg, "package-lock.json": lock} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		// ci installs exactly the lock file's versions, dependencies
		// included; no package's install script runs.
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			need("npm install of the SDKs failed: %v\n%s", err, out)
		}
		if err := os.WriteFile(stamp, []byte(hex.EncodeToString(sum[:])), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The scripts run beside node_modules, where Node resolves the SDKs.
	for _, f := range []string{"sdk.mjs", "run.mjs", "capture.mjs", "keys.mjs", "models.mjs", "uploads.mjs"} {
		b, err := os.ReadFile(filepath.Join("testdata", "sdk", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return node, dir
}

// runSDKScript runs one of the scripts sdkNode installed with env added
// and returns the steps it reports.
func runSDKScript(t *testing.T, node, dir, script string, env ...string) []sdkStep {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
	}
	var steps []sdkStep
	if err := json.Unmarshal(out, &steps); err != nil {
		t.Fatalf("report %q: %v", out, err)
	}
	return steps
}

type sdkStep struct {
	SDK    string `json:"sdk"`
	Op     string `json:"op"`
	OK     bool   `json:"ok"`
	Status *int   `json:"status"`
	Error  string `json:"error"`
	Result any    `json:"result"`
}

// TestOfficialSDKs runs the npm packages themselves, unmodified, against
// the gateway on the embedded default: each uploads three files and lists,
// retrieves, downloads and deletes (as far as sdkOps allows), and a 110 MB
// upload from Node's fetch and from the Anthropic SDK must read its 413.
func TestOfficialSDKs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Node")
	}
	node, dir := sdkNode(t)
	g := sdkConfig(t)
	key := g.newKey(t, "sdk-node")
	const tooLarge = 110_000_000

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "run.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GATEWAY_URL="+g.URL, "GATEWAY_KEY="+key,
		"SDK_OPS="+strings.Join(enabledSDKOps(), ","), fmt.Sprintf("TOO_LARGE=%d", tooLarge))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node run.mjs: %v\n%s", err, stderr.String())
	}
	var steps []sdkStep
	if err := json.Unmarshal(out, &steps); err != nil {
		t.Fatalf("report %q: %v", out, err)
	}
	seen := map[string]int{}
	live := map[string]bool{} // the files uploaded and not deleted yet
	for _, s := range steps {
		seen[s.SDK+" "+s.Op]++
		if !s.OK {
			t.Errorf("%s %s failed: %s (status %v)", s.SDK, s.Op, s.Error, s.Status)
			continue
		}
		if m, ok := s.Result.(map[string]any); ok {
			id, _ := m["id"].(string)
			switch s.Op {
			case "upload":
				live[id] = true
			case "delete":
				delete(live, id)
			}
		}
		switch {
		case s.Op == "too-large" && s.SDK == "fetch":
			env, _ := s.Result.(map[string]any)["error"].(map[string]any)
			md, _ := env["metadata"].(map[string]any)
			if s.Status == nil || *s.Status != 413 || md["max_file_bytes"] != float64(g.Config.Limits.MaxFileBytes) {
				t.Errorf("fetch of %d bytes: status %v, answer %v; want 413 with max_file_bytes", tooLarge, s.Status, s.Result)
			}
		case s.Op == "list":
			// The SDKs share one key, so one workspace: each walk must
			// return every file still there (the earlier SDKs' too),
			// each once.
			files, _ := s.Result.([]any)
			var got []string
			for _, f := range files {
				id, _ := f.(map[string]any)["id"].(string)
				got = append(got, id)
			}
			slices.Sort(got)
			want := slices.Sorted(maps.Keys(live))
			if !slices.Equal(got, want) {
				t.Errorf("%s list walked %v over its pages, want each file of the workspace once: %v", s.SDK, got, want)
			}
			for i, f := range files {
				for _, b := range checkSchema(f, sdkSchemas[s.SDK].file) {
					t.Errorf("%s list item %d: %s", s.SDK, i, b)
				}
			}
		case s.Op == "download":
			if text, _ := s.Result.(string); !strings.HasPrefix(text, "hello from the "+s.SDK+" SDK, file 1") {
				t.Errorf("%s download = %q", s.SDK, text)
			}
		default:
			checkAnswer(t, s.SDK, s.Op, s.Result)
		}
	}
	for sdk := range sdkSchemas {
		if n := seen[sdk+" upload"]; n != 3 {
			t.Errorf("%s: %d uploads reported, want 3", sdk, n)
		}
	}
	if seen["fetch too-large"] != 1 || seen["anthropic too-large"] != 1 {
		t.Errorf("the over-limit uploads were not all reported: %v", seen)
	}
}
