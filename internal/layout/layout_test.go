package layout

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// card is the top level the design card names; every one must be there.
var card = []string{"cmd", "gateway", "backends", "catalog", "policy", "deploy", "configs"}

// besides are the only other folders allowed at the top: the two services
// the card's shape names, the ground floor, the public client, benchmarks
// and documentation.
var besides = []string{"workspace", "files", "internal", "client", "bench", "docs"}

// mayImport says, for each top-level room, which other rooms its code (not
// its tests) may import. Read from the top floor down: the wiring, then the
// edge and the adapters (which never see each other), the configuration,
// the file service, policy, the workspace service, the catalog, and the
// ground floor that everyone may use. Since every arrow points to a lower
// floor, none runs back up and no circle can close.
var mayImport = map[string][]string{
	"cmd":       {"gateway", "backends", "configs", "files", "policy", "workspace", "catalog", "client", "internal"},
	"bench":     {"gateway", "backends", "configs", "files", "policy", "workspace", "catalog", "client", "internal"},
	"gateway":   {"files", "policy", "workspace", "catalog", "client", "internal"},
	"backends":  {"files", "policy", "workspace", "catalog", "internal"},
	"configs":   {"files", "internal"},
	"files":     {"policy", "workspace", "catalog", "internal"},
	"policy":    {"workspace", "catalog", "internal"},
	"workspace": {"catalog", "internal"},
	"catalog":   {"internal"},
	"internal":  {},
	"client":    {},
	"deploy":    {},
	"docs":      {},
}

// confined lists imports that only some folders may make: the cloud SDKs
// and the database drivers stay with the adapters that wrap them, go-redis
// with the limiters, and the test helpers out of the product. A prefix
// matches an import path and everything under it.
type confined struct {
	prefixes []string
	// code are the folders whose non-test files may import it.
	code []string
	// tests are further folders whose test files may (the black-box suites
	// look at the real servers directly).
	tests []string
}

var confinedImports = []confined{
	{prefixes: []string{"github.com/aws/aws-sdk-go-v2", "cloud.google.com/go/storage", "google.golang.org/api"},
		code: []string{"backends", "bench"}, tests: []string{"internal/e2e"}},
	{prefixes: []string{"github.com/redis/go-redis"}, code: []string{"policy"}},
	{prefixes: []string{"github.com/jackc/pgx", "modernc.org/sqlite", "database/sql"},
		code: []string{"backends/sqlstore"}, tests: []string{"internal/e2e", "gateway/console"}},
	// The Redis limiters are an adapter that lives beside the policy it
	// implements: only the wiring builds them.
	{prefixes: []string{module + "/policy/limits/redis"}, code: []string{"cmd", "policy/limits/redis"}, tests: []string{"internal/e2e", "policy"}},
	{prefixes: []string{module + "/backends/storage/storagetest", module + "/backends/providers/providertest",
		module + "/policy/limits/limitertest", module + "/internal/testenv"},
		code: []string{"bench"}, tests: []string{""}},
}

// domain are the folders that speak no HTTP and no wire format: the edge
// turns requests into typed values before they arrive, and the domain's
// values and errors into responses after.
var domain = []string{"catalog", "workspace", "files", "policy"}

var domainMayNotImport = []string{"net/http", "mime/multipart", "github.com/go-chi/chi", module + "/internal/jsonobj"}

const module = "github.com/aigateway/gateway"

func TestTopLevel(t *testing.T) {
	for _, p := range checkTopLevel(repoRoot(t)) {
		t.Error(p)
	}
}

func TestImports(t *testing.T) {
	files, err := readImports(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("read the imports of %d Go files; the module has hundreds", len(files))
	}
	for _, p := range checkImports(files) {
		t.Error(p)
	}
}

// TestRulesCatchBreaches builds a small module that breaks every rule once
// and checks that each breach is named, so that a rule that stopped
// matching anything cannot pass unnoticed.
func TestRulesCatchBreaches(t *testing.T) {
	root := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module "+module+"\n")
	write(".gitignore", "/data/\n")
	write("data/x.txt", "local data, ignored\n")
	write("util/util.go", "package util\n")
	write("deploy/testenv/go.mod", "module tools\n")
	write("deploy/testenv/tools.go", "package tools\nimport _ \"github.com/redis/go-redis/v9\"\n")
	write("gateway/files.go", "package gateway\nimport _ \""+module+"/backends/storage/fs\"\n")
	write("catalog/x.go", "package catalog\nimport _ \""+module+"/files\"\nimport _ \"net/http\"\n")
	write("files/s3.go", "package files\nimport _ \"github.com/aws/aws-sdk-go-v2/service/s3\"\n")
	write("files/s3_test.go", "package files\nimport _ \"github.com/aws/aws-sdk-go-v2/service/s3\"\n")
	write("internal/e2e/s3_test.go", "package e2e\nimport _ \"github.com/aws/aws-sdk-go-v2/service/s3\"\n")
	write("gateway/redis.go", "package gateway\nimport _ \"github.com/redis/go-redis/v9\"\n")
	write("gateway/fake.go", "package gateway\nimport _ \""+module+"/internal/testenv\"\n")
	write("gateway/fake_test.go", "package gateway\nimport _ \""+module+"/internal/testenv\"\n")

	problems := checkTopLevel(root)
	files, err := readImports(root)
	if err != nil {
		t.Fatal(err)
	}
	problems = append(problems, checkImports(files)...)
	text := strings.Join(problems, "\n")
	for _, want := range []string{
		`"util" is not a folder`,
		`"backends" of the design card is missing`,
		"gateway/files.go: gateway may not import backends",
		"catalog/x.go: catalog may not import files",
		"catalog/x.go: the domain speaks no HTTP and no wire format: net/http",
		"files/s3.go: github.com/aws/aws-sdk-go-v2/service/s3",
		"files/s3_test.go: github.com/aws/aws-sdk-go-v2/service/s3",
		"gateway/redis.go: github.com/redis/go-redis/v9",
		"gateway/fake.go: " + module + "/internal/testenv",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no problem says %q; got:\n%s", want, text)
		}
	}
	for _, unwanted := range []string{"data", "deploy/testenv/tools.go", "internal/e2e/s3_test.go", "gateway/fake_test.go"} {
		for _, p := range problems {
			if strings.HasPrefix(p, unwanted+":") || strings.Contains(p, `"`+unwanted+`"`) {
				t.Errorf("a problem names %s, which breaks no rule: %s", unwanted, p)
			}
		}
	}
}

func checkTopLevel(root string) []string {
	var problems []string
	ignored := gitignoredTop(root)
	entries, err := os.ReadDir(root)
	if err != nil {
		return []string{err.Error()}
	}
	have := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || strings.HasPrefix(name, ".") || ignored[name] {
			continue
		}
		have[name] = true
		if !slices.Contains(card, name) && !slices.Contains(besides, name) {
			problems = append(problems, fmt.Sprintf("%q is not a folder the top level may hold (the card's %v and %v): put it in the room whose job it is", name, card, besides))
		}
	}
	for _, name := range card {
		if !have[name] {
			problems = append(problems, fmt.Sprintf("%q of the design card is missing at the top level", name))
		}
	}
	return problems
}

// gitignoredTop returns the folders .gitignore excludes at the top (lines
// such as "/data/" or "node_modules/"), which a local run may have made.
func gitignoredTop(root string) map[string]bool {
	ignored := map[string]bool{}
	f, err := os.Open(filepath.Join(root, ".gitignore"))
	if err != nil {
		return ignored
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		// "/data/" and "node_modules/": a folder that may be at the top.
		name := strings.TrimPrefix(line, "/")
		if strings.HasSuffix(name, "/") && strings.Count(name, "/") == 1 {
			ignored[strings.TrimSuffix(name, "/")] = true
		}
	}
	return ignored
}

// goFile is one Go file of the module and what it imports.
type goFile struct {
	path    string // slash-separated, relative to the module root
	test    bool
	imports []string
}

func (f goFile) dir() string  { return path.Dir(f.path) }
func (f goFile) room() string { return strings.SplitN(f.path, "/", 2)[0] }

// readImports parses the import blocks of every Go file of the module
// rooted at root, leaving out hidden folders, testdata and nested modules
// (the test servers' tools module has its own dependencies).
func readImports(root string) ([]goFile, error) {
	var files []goFile
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			if rel != "." {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || !strings.Contains(rel, "/") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		gf := goFile{path: rel, test: strings.HasSuffix(rel, "_test.go")}
		for _, imp := range f.Imports {
			ip, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			gf.imports = append(gf.imports, ip)
		}
		files = append(files, gf)
		return nil
	})
	return files, err
}

func checkImports(files []goFile) []string {
	var problems []string
	for _, f := range files {
		for _, ip := range f.imports {
			if p := checkImport(f, ip); p != "" {
				problems = append(problems, f.path+": "+p)
			}
		}
	}
	return problems
}

// checkImport returns what is wrong with f importing ip, or "".
func checkImport(f goFile, ip string) string {
	for _, c := range confinedImports {
		if !hasPathPrefix(ip, c.prefixes...) {
			continue
		}
		if within(f.dir(), c.code...) || (f.test && within(f.dir(), c.tests...)) {
			continue
		}
		where := strings.Join(c.code, ", ")
		return fmt.Sprintf("%s is imported only under %s", ip, where)
	}
	room := f.room()
	if slices.Contains(domain, room) && !f.test && hasPathPrefix(ip, domainMayNotImport...) {
		return "the domain speaks no HTTP and no wire format: " + ip + " belongs in the edge (gateway/)"
	}
	if f.test || !hasPathPrefix(ip, module) {
		return ""
	}
	target := strings.SplitN(strings.TrimPrefix(ip, module+"/"), "/", 2)[0]
	if target == room {
		return ""
	}
	allowed, known := mayImport[room]
	if !known {
		return fmt.Sprintf("%s is not a room of the house", room)
	}
	if !slices.Contains(allowed, target) {
		return fmt.Sprintf("%s may not import %s (%s): imports point from the top floor down", room, target, ip)
	}
	return ""
}

// hasPathPrefix reports whether ip is one of prefixes or lies under one.
func hasPathPrefix(ip string, prefixes ...string) bool {
	for _, p := range prefixes {
		if ip == p || strings.HasPrefix(ip, p+"/") {
			return true
		}
	}
	return false
}

// within reports whether dir is one of folders or lies under one; ""
// stands for every folder.
func within(dir string, folders ...string) bool {
	for _, f := range folders {
		if f == "" || dir == f || strings.HasPrefix(dir, f+"/") {
			return true
		}
	}
	return false
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", root, err)
	}
	return root
}
