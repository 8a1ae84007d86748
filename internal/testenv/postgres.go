package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Environment variables exported by deploy/testenv/postgres.sh for tests
// that run PostgreSQL clusters of their own.
const (
	PostgresBinDirVar = "GATEWAY_TEST_POSTGRES_BINDIR" // directory of initdb, postgres and pg_basebackup
	PostgresRunAsVar  = "GATEWAY_TEST_POSTGRES_RUN_AS" // user to run them as ("postgres" when root; empty otherwise)
)

// Postgres is a PostgreSQL cluster a test started: its own data directory,
// port and server process, stopped and removed when the test ends. Its
// superuser is "app", trusted without a password, as on the shared server.
type Postgres struct {
	Port int
	// URL reaches the cluster's postgres database.
	URL string

	t      testing.TB
	bin    string
	cred   *syscall.Credential
	dir    string // owned by the server's user: data/, the socket, the log
	cmd    *exec.Cmd
	exited chan struct{}
}

// PostgresOptions are the server settings (-c name=value) a cluster starts
// with, beside the test defaults (loopback only, fsync off).
//
// Settings given here are not copied to a standby made from the cluster
// (pg_basebackup copies postgresql.auto.conf, not the command line), which
// is what a failover test wants of synchronous_standby_names: a promoted
// standby that waited for a standby of its own would never commit again.
type PostgresOptions struct {
	Settings map[string]string
}

// StartPostgres initialises a cluster ready to be a streaming primary
// (wal_level replica, WAL senders and trusted replication connections from
// loopback, which initdb --auth=trust writes) and starts it.
func StartPostgres(t testing.TB, opts PostgresOptions) *Postgres {
	t.Helper()
	p := newPostgres(t, "primary")
	p.run(t, "initdb", "-D", p.data(), "-U", "app", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")
	p.start(t, opts.Settings)
	return p
}

// StartStandby makes a streaming standby of p (pg_basebackup -R: a copy of
// its data, standby.signal and primary_conninfo) and starts it. name is its
// application_name on p, the name synchronous_standby_names lists.
func (p *Postgres) StartStandby(t testing.TB, name string, opts PostgresOptions) *Postgres {
	t.Helper()
	s := newPostgres(t, "standby")
	conninfo := fmt.Sprintf("host=127.0.0.1 port=%d user=app application_name=%s", p.Port, name)
	s.run(t, "pg_basebackup", "-D", s.data(), "-d", conninfo, "-R", "-X", "stream", "--no-sync")
	s.start(t, opts.Settings)
	return s
}

// AwaitSynchronous waits until the standby named name streams from p as its
// synchronous standby: from then on p acknowledges a commit only once the
// standby has it.
func (p *Postgres) AwaitSynchronous(t testing.TB, name string) {
	t.Helper()
	p.await(t, "standby "+name+" to stream synchronously", func(query func(string) (string, error)) (bool, error) {
		n, err := query(`SELECT count(*) FROM pg_stat_replication
			WHERE application_name = '` + strings.ReplaceAll(name, "'", "''") + `' AND state = 'streaming' AND sync_state = 'sync'`)
		return n == "1", err
	})
}

// Promote makes a standby a primary and returns once it accepts writes.
func (p *Postgres) Promote(t testing.TB) {
	t.Helper()
	p.await(t, "the promotion", func(query func(string) (string, error)) (bool, error) {
		if ok, err := query(`SELECT pg_promote(true, 30)`); err != nil || ok != "t" {
			return false, err
		}
		recovering, err := query(`SELECT pg_is_in_recovery()`)
		return recovering == "f", err
	})
}

// Kill ends the server and every backend of it at once with SIGKILL, as a
// crash of its machine ends them: no shutdown checkpoint, no goodbye to
// clients or standbys.
func (p *Postgres) Kill(t testing.TB) {
	t.Helper()
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("kill postgres: %v", err)
	}
	<-p.exited
}

// Log is the server's log so far, for a failure message.
func (p *Postgres) Log() string {
	b, err := os.ReadFile(filepath.Join(p.dir, "postgres.log"))
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func newPostgres(t testing.TB, role string) *Postgres {
	t.Helper()
	p := &Postgres{t: t, bin: Require(t, PostgresBinDirVar)}
	if name := os.Getenv(PostgresRunAsVar); name != "" {
		p.cred = credential(t, name)
	}
	// A directory of its own under the system's temp dir: the test's own
	// temp dirs are private to root, and PostgreSQL runs as another user.
	dir, err := os.MkdirTemp("", "gateway-pg-"+role+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if p.cred != nil {
		if err := os.Chown(dir, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	p.dir = dir
	return p
}

func credential(t testing.TB, name string) *syscall.Credential {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("%s=%s: %v", PostgresRunAsVar, name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatalf("user %s: %v", name, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

func (p *Postgres) data() string { return filepath.Join(p.dir, "data") }

// command is one of the cluster's programs, run as its user.
func (p *Postgres) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(p.bin, name), args...)
	cmd.Dir = p.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	return cmd
}

// run runs a program to its end, failing the test with its output.
func (p *Postgres) run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := p.command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, out)
	}
}

// start runs the server on a free port and waits until it takes
// connections. A port taken between its choice and the bind is tried again.
func (p *Postgres) start(t testing.TB, settings map[string]string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		err := p.startOn(freePort(t), settings)
		if err == nil {
			return
		}
		if attempt == 3 {
			t.Fatalf("postgres: %v\n%s", err, p.Log())
		}
	}
}

func (p *Postgres) startOn(port int, settings map[string]string) error {
	args := []string{"-D", p.data(), "-p", strconv.Itoa(port)}
	defaults := map[string]string{
		"listen_addresses":        "127.0.0.1",
		"unix_socket_directories": p.dir,
		"fsync":                   "off",
		"wal_level":               "replica",
		"max_wal_senders":         "4",
		"max_connections":         "100",
	}
	for k, v := range settings {
		defaults[k] = v
	}
	for k, v := range defaults {
		args = append(args, "-c", k+"="+v)
	}
	logf, err := os.OpenFile(filepath.Join(p.dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the server holds its own descriptor
	if p.cred != nil {
		_ = logf.Chown(int(p.cred.Uid), int(p.cred.Gid))
	}
	cmd := p.command("postgres", args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// A group of its own, so Kill reaches every backend with one signal.
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	p.cmd, p.exited, p.Port = cmd, exited, port
	p.URL = fmt.Sprintf("postgres://app@127.0.0.1:%d/postgres?sslmode=disable", port)
	p.t.Cleanup(p.stop)

	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := p.query(context.Background(), "SELECT 1")
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("exited on port %d", port)
		default:
		}
		if time.Now().After(deadline) {
			p.stop()
			return fmt.Errorf("no connection on port %d within 30s: %w", port, err)
		}
		time.Sleep(50 * time.Millisecond) // poll interval, bounded by the deadline
	}
}

// stop ends the server (immediate shutdown, then SIGKILL) and waits for it.
func (p *Postgres) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGQUIT)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}

// query runs one SQL statement on p with psql (the cluster's own client:
// a driver here would put one under internal) and returns its one value.
func (p *Postgres) query(ctx context.Context, sql string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 35*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(p.bin, "psql"), "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1",
		"-h", "127.0.0.1", "-p", strconv.Itoa(p.Port), "-U", "app", "-d", "postgres", "-c", sql)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("psql %q: %w: %s", sql, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// await polls cond, whose queries run on p, until it holds, for 30 seconds.
func (p *Postgres) await(t testing.TB, what string, cond func(query func(string) (string, error)) (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last error
	query := func(sql string) (string, error) { return p.query(context.Background(), sql) }
	for {
		ok, err := cond(query)
		if ok && err == nil {
			return
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			t.Fatalf("postgres on port %d: timed out waiting for %s (last error: %v)\n%s", p.Port, what, last, p.Log())
		}
		time.Sleep(50 * time.Millisecond) // poll interval, bounded by the deadline
	}
}

// freePort is a loopback port nobody listened on a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
