package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/aigateway/gateway/internal/testenv"
)

// sharedRedis returns a client of the Redis server `make test` started,
// closed at the end of the test, and a key prefix no other test uses.
func sharedRedis(t testing.TB) (goredis.UniversalClient, string) {
	t.Helper()
	url := testenv.RedisURL(t)
	c, err := NewClient(ClientOptions{URL: url, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("ping %s: %v", testenv.RedisURLVar, err)
	}
	return c, "test:" + uuid.NewString()[:8] + ":"
}

// redisServer is a redis-server process of the test's own, which it may
// kill and restart on the same port.
type redisServer struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	args []string // more arguments of redis-server (a replica's --replicaof)
	auth *tlsAuth // nil: plain TCP, no ACL user
	cmd  *exec.Cmd
}

// startRedisServer starts redis-server from GATEWAY_TEST_REDIS_SERVER on a
// free loopback port, in a temporary directory, without persistence.
func startRedisServer(t testing.TB, args ...string) *redisServer {
	t.Helper()
	return startAuthRedisServer(t, nil, args...)
}

// startAuthRedisServer is startRedisServer taking TLS only and auth's
// user alone when auth is not nil.
func startAuthRedisServer(t testing.TB, auth *tlsAuth, args ...string) *redisServer {
	t.Helper()
	bin := testenv.Require(t, testenv.RedisServerVar)
	s := &redisServer{t: t, bin: bin, dir: t.TempDir(), port: freePort(t), args: args, auth: auth}
	s.start()
	t.Cleanup(s.kill)
	return s
}

// client returns a client of this server alone, which the caller closes.
func (s *redisServer) client() *goredis.Client {
	o := &goredis.Options{Addr: s.Addr(), MaxRetries: -1, DialTimeout: 100 * time.Millisecond}
	s.auth.apply(s.t, o)
	return goredis.NewClient(o)
}

// tlsAuth is a CA, a certificate it signed for 127.0.0.1 (a server's and a
// client's), and one ACL user: servers started with it take TLS only,
// ask clients for a certificate, and know that user alone.
type tlsAuth struct {
	caFile, certFile, keyFile string
	user, pass                string
}

func newTLSAuth(t testing.TB) *tlsAuth {
	t.Helper()
	dir := t.TempDir()
	ca, caKey := writeCA(t, dir)
	cert, key := writeLeaf(t, dir, "node", ca, caKey)
	return &tlsAuth{caFile: filepath.Join(dir, "ca.pem"), certFile: cert, keyFile: key, user: "gw", pass: "s3cret"}
}

// serverArgs are redis-server's arguments for port: TLS only (replication
// and a Cluster's bus too), the default user off, replicas authenticating
// to their master as the user.
func (a *tlsAuth) serverArgs(port int) []string {
	return []string{"--port", "0", "--tls-port", strconv.Itoa(port),
		"--tls-cert-file", a.certFile, "--tls-key-file", a.keyFile, "--tls-ca-cert-file", a.caFile,
		"--tls-replication", "yes", "--tls-cluster", "yes",
		"--user", "default", "off", "--user", a.user, "on", ">" + a.pass, "~*", "&*", "+@all",
		"--masteruser", a.user, "--masterauth", a.pass}
}

// options are the limiter's client options for this user over TLS.
func (a *tlsAuth) options(o ClientOptions) ClientOptions {
	if a != nil {
		o.Username, o.Password = a.user, a.pass
		o.TLS = &TLSOptions{CAFile: a.caFile, CertFile: a.certFile, KeyFile: a.keyFile}
	}
	return o
}

// apply makes o, a test's own client, connect as the user over TLS (a nil
// a: unchanged).
func (a *tlsAuth) apply(t testing.TB, o *goredis.Options) {
	if a == nil {
		return
	}
	c, err := (&TLSOptions{CAFile: a.caFile, CertFile: a.certFile, KeyFile: a.keyFile}).config()
	if err != nil {
		t.Fatal(err)
	}
	o.TLSConfig, o.Username, o.Password = c, a.user, a.pass
}

func (s *redisServer) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }
func (s *redisServer) URL() string  { return "redis://" + s.Addr() + "/0" }

func (s *redisServer) start() {
	s.t.Helper()
	listen := []string{"--port", strconv.Itoa(s.port)}
	if s.auth != nil {
		listen = s.auth.serverArgs(s.port)
	}
	// --repl-diskless-sync-delay 0: a master waits 5 s by default for more
	// replicas before it sends the first a copy of its data.
	args := append(append([]string{"--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", s.dir,
		"--daemonize", "no", "--repl-diskless-sync-delay", "0"}, listen...), s.args...)
	cmd := exec.Command(s.bin, args...)
	log, err := os.Create(filepath.Join(s.dir, fmt.Sprintf("redis-%d.log", time.Now().UnixNano())))
	if err != nil {
		s.t.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	s.cmd = cmd
	// Ready when it answers PING.
	c := s.client()
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on %s not ready: %v", s.Addr(), err)
		}
		time.Sleep(10 * time.Millisecond) // polling a child process, bounded by the deadline
	}
}

// kill stops the server with SIGKILL, as a crash would.
func (s *redisServer) kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

func (s *redisServer) restart() {
	s.t.Helper()
	s.kill()
	s.start()
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// slowProxy forwards TCP connections to target, holding every chunk of
// bytes for delay in each direction: a Redis that is up but slow.
type slowProxy struct {
	ln     net.Listener
	target string
	delay  time.Duration
	done   chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

func startSlowProxy(t testing.TB, target string, delay time.Duration) *slowProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &slowProxy{ln: ln, target: target, delay: delay, done: make(chan struct{})}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *slowProxy) Addr() string { return p.ln.Addr().String() }

func (p *slowProxy) serve() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(out, in)
		go p.pipe(in, out)
	}
}

func (p *slowProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			select { // the latency being simulated
			case <-time.After(p.delay):
			case <-p.done:
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				_ = dst.Close()
			}
			return
		}
	}
}

func (p *slowProxy) close() {
	_ = p.ln.Close()
	close(p.done)
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
