package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aigateway/gateway/internal/outage"
	"github.com/aigateway/gateway/internal/testenv"
	"github.com/aigateway/gateway/workspace"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestClassify: an outage of the database becomes outage.ErrUnavailable
// and nothing else does, so a bug is never answered "try again".
func TestClassify(t *testing.T) {
	// A real error of a DSN whose hosts all refuse: pgconn's ConnectError
	// (a failover's dead primary and a standby not yet promoted answer
	// with one too: refused, then "read only connection").
	_, noHost := pgconn.Connect(context.Background(), "postgres://app@127.0.0.1:1,127.0.0.1:2/x?connect_timeout=2&target_session_attrs=read-write")
	if noHost == nil {
		t.Fatal("connected to ports 1 and 2")
	}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"cannot connect now", &pgconn.PgError{Code: "57P03"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"connection dropped", fmt.Errorf("query: %w", io.ErrUnexpectedEOF), true},
		{"dial refused", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{"connection closed under pgx", fmt.Errorf("begin: %w", pgconn.ErrConnClosed), true},
		{"no host takes writes", fmt.Errorf("begin: %w", noHost), true},
		{"read-only server", &pgconn.PgError{Severity: "ERROR", Code: "25006"}, true},
		{"crash shutdown", &pgconn.PgError{Severity: "FATAL", Code: "57P02"}, true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"syntax error", &pgconn.PgError{Code: "42601"}, false},
		{"domain outcome", workspace.ErrNotFound, false},
		{"plain bug", errors.New("scan: wrong type"), false},
	}
	s := &Store{d: postgresDialect, log: zap.NewNop()}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err
			s.classify(&err)
			if got := errors.Is(err, outage.ErrUnavailable); got != tc.want {
				t.Errorf("unavailable = %v for %v, want %v", got, tc.err, tc.want)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("%v no longer wraps the driver's error", err)
			}
		})
	}
	var none error
	s.classify(&none)
	if none != nil {
		t.Errorf("classify(nil) = %v", none)
	}
}

// TestKeepConn: the connections an error leaves in the pool are those
// that can still serve: not after a FATAL error (the server ends the
// session) nor on a read-only server.
func TestKeepConn(t *testing.T) {
	tests := []struct {
		severity, code string
		keep           bool
	}{
		{"FATAL", "57P01", false}, // admin shutdown
		{"FATAL", "53300", false}, // too many connections
		{"ERROR", "25006", false}, // read-only server
		{"ERROR", "23505", true},  // a duplicate: a fine connection
		{"ERROR", "40001", true},  // serialization failure
		{"ERROR", "57014", true},  // statement cancelled by its context
	}
	for _, tc := range tests {
		if got := keepConn(&pgconn.PgError{Severity: tc.severity, Code: tc.code}); got != tc.keep {
			t.Errorf("%s %s: keep = %v, want %v", tc.severity, tc.code, got, tc.keep)
		}
	}
}

// TestPostgresReadOnlyHost: when the server the pool's connections are on
// becomes read-only, the writes that meet it fail as an outage, its
// connections leave the pool, and the next writes go to the host of a
// multi-host DSN that takes them (target_session_attrs=read-write) rather
// than to the read-only one for as long as the pool keeps them. Two
// clusters of the test's own: one is made read-only.
func TestPostgresReadOnlyHost(t *testing.T) {
	first := testenv.StartPostgres(t, testenv.PostgresOptions{})
	second := testenv.StartPostgres(t, testenv.PostgresOptions{})
	pg := backend{driver: DriverPostgres}
	pg.open(t, second.URL) // its schema, as a promoted standby has it
	s := pg.open(t, fmt.Sprintf("postgres://app@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=read-write",
		first.Port, second.Port))
	ctx := testContext(t)
	// Several connections to the first server in the pool.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { mustUser(t, s, fmt.Sprintf("before-%d", i)) })
	}
	wg.Wait()

	admin, err := pgx.Connect(ctx, first.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "ALTER SYSTEM SET default_transaction_read_only = on"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		t.Fatal(err)
	}
	onSecond := func(user string) bool {
		c, err := pgx.Connect(ctx, second.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		var n int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM users WHERE id = $1", user).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	// Until the reload reaches them the first server's sessions still
	// write; then each fails once, as an outage, and leaves the pool.
	refused := 0
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		user := fmt.Sprintf("after-%d", i)
		err := s.EnsureUser(ctx, user)
		switch {
		case err == nil && onSecond(user):
			if refused == 0 {
				t.Error("no write met the read-only server")
			}
			t.Logf("%d writes refused before one reached the writable host", refused)
			return
		case err != nil && !errors.Is(err, outage.ErrUnavailable):
			t.Fatalf("a write on the read-only server: %v, want ErrUnavailable", err)
		case err != nil:
			refused++
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write reached the writable host within 10s (%d refused as read-only)", refused)
		}
		time.Sleep(10 * time.Millisecond) // poll interval, bounded by the deadline
	}
}

// TestPostgresSilentFirstHost: a multi-host DSN whose first host takes
// connections and never answers (a failover's old primary whose machine
// went silent) reaches the next host within multiHostConnectTimeout of
// each attempt, not the single host's ten seconds.
func TestPostgresSilentFirstHost(t *testing.T) {
	b := postgresBackend(t)
	dsn := b.fresh(t)
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held sync.WaitGroup
	t.Cleanup(func() { _ = silent.Close(); held.Wait() })
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			held.Go(func() { _, _ = io.Copy(io.Discard, c); _ = c.Close() })
		}
	}()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = silent.Addr().String() + "," + net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port))
	q := u.Query()
	q.Set("target_session_attrs", "read-write")
	u.RawQuery = q.Encode()

	start := time.Now()
	s := b.open(t, u.String())
	mustUser(t, s, "alice")
	took := time.Since(start)
	// Open and the write run one after the other on one connection: one wait.
	if took < multiHostConnectTimeout || took > multiHostConnectTimeout+3*time.Second {
		t.Errorf("open and write took %v past a silent first host, want about %v", took, multiHostConnectTimeout)
	}
}

// TestPostgresOutage cuts a real PostgreSQL server off from the store (a
// proxy between them stops) and checks reads and writes report the outage
// as outage.ErrUnavailable, then recover when it comes back.
func TestPostgresOutage(t *testing.T) {
	b := postgresBackend(t)
	dsn := b.fresh(t)
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	proxy := startCutProxy(t, net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)))
	s := b.open(t, proxiedDSN(t, dsn, proxy.addr()))
	core, logs := observer.New(zap.InfoLevel)
	s.log = zap.New(core)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	ws := mustWorkspace(t, s, "alice", "outage")

	proxy.cut()
	if _, err := s.WorkspaceByID(ctx, "alice", ws.ID); !errors.Is(err, outage.ErrUnavailable) {
		t.Errorf("read during the outage: %v, want ErrUnavailable", err)
	}
	if _, err := s.Reserve(ctx, ws.ID, 10, 100, 60e9); !errors.Is(err, outage.ErrUnavailable) {
		t.Errorf("reserve during the outage: %v, want ErrUnavailable", err)
	}
	if _, err := s.CreateWorkspace(ctx, newWorkspace("alice", "during"), nil); !errors.Is(err, outage.ErrUnavailable) {
		t.Errorf("create during the outage: %v, want ErrUnavailable", err)
	}

	for range 20 {
		_, _ = s.WorkspaceByID(ctx, "alice", ws.ID)
	}

	proxy.restore()
	if _, err := s.WorkspaceByID(ctx, "alice", ws.ID); err != nil {
		t.Errorf("read after the outage: %v", err)
	}
	// The outage is logged when it begins and when it ends, not per call.
	var lines []string
	for _, e := range logs.All() {
		lines = append(lines, e.Level.String()+" "+e.Message)
	}
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "error metadata database unavailable") || lines[1] != "info metadata database reachable again" {
		t.Errorf("outage logged as %q, want one error line and one recovery line", lines)
	}
}

// cutProxy forwards TCP connections to target until cut, which closes every
// connection and refuses new ones until restore.
type cutProxy struct {
	t      *testing.T
	target string
	ln     net.Listener
	mu     sync.Mutex
	down   bool
	conns  []net.Conn
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{t: t, target: target, ln: ln}
	t.Cleanup(func() { _ = ln.Close(); p.cut() })
	go p.accept()
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			_ = c.Close()
			continue
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(u, c); _ = u.Close() }()
		go func() { _, _ = io.Copy(c, u); _ = c.Close() }()
	}
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

func (p *cutProxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// proxiedDSN is dsn with its host and port replaced by addr.
func proxiedDSN(t *testing.T, dsn, addr string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = addr
	return u.String()
}

// TestEveryMethodClassifies: every exported method of the Store defers
// classify, so a method added later cannot answer an outage with a 500.
func TestEveryMethodClassifies(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	exempt := map[string]bool{"Ping": true, "Close": true} // Ping wraps for readiness; Close has no caller to answer
	for _, f := range pkgs["sqlstore"].Files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || !fn.Name.IsExported() || exempt[fn.Name.Name] {
				continue
			}
			if star, ok := fn.Recv.List[0].Type.(*ast.StarExpr); !ok || star.X.(*ast.Ident).Name != "Store" {
				continue
			}
			first, ok := fn.Body.List[0].(*ast.DeferStmt)
			if !ok {
				t.Errorf("%s: Store.%s does not begin with defer s.classify(&err)", fset.Position(fn.Pos()), fn.Name.Name)
				continue
			}
			if sel, ok := first.Call.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "classify" {
				t.Errorf("%s: Store.%s does not begin with defer s.classify(&err)", fset.Position(fn.Pos()), fn.Name.Name)
			}
		}
	}
}
