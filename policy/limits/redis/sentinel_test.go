package redis

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/aigateway/gateway/internal/testenv"
	"github.com/aigateway/gateway/policy/limits"
)

// TestSentinelFollowsTheFailover: a limiter given the Sentinels' address
// and the master's name keeps its decisions on the master, and on the
// replica the Sentinel promotes once the master dies, within 2 s of the
// promotion. Once in plain TCP, once with every server (Sentinel, master,
// replica) taking TLS only with client certificates and one ACL user.
func TestSentinelFollowsTheFailover(t *testing.T) {
	t.Run("plain", func(t *testing.T) { testSentinelFailover(t, nil) })
	t.Run("TLS with an ACL user", func(t *testing.T) { testSentinelFailover(t, newTLSAuth(t)) })
}

func testSentinelFailover(t *testing.T, auth *tlsAuth) {
	master := startAuthRedisServer(t, auth)
	replica := startAuthRedisServer(t, auth, "--replicaof", "127.0.0.1", strconv.Itoa(master.port))
	sentinel := startSentinel(t, master)

	const timeout = 200 * time.Millisecond
	client, err := NewClient(auth.options(ClientOptions{Addrs: []string{sentinel}, MasterName: "gw", Timeout: timeout}))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	h := newFailoverHarness(t, client, FailoverOptions{ReplicasHint: 2, Timeout: timeout, ProbeInterval: 50 * time.Millisecond})
	ctx := context.Background()
	lookups := limits.Limit{Rate: 1000, Per: time.Second, Burst: 1000}

	// landsOn asserts that, within the deadline, a decision is stored in
	// srv, and returns when the first was; promoted, when set, reports
	// whether srv has been promoted (and is asked first).
	landsOn := func(srv *redisServer, within time.Duration, promoted func() bool) (stored, promotion time.Time) {
		t.Helper()
		direct := srv.client()
		defer direct.Close()
		start := time.Now()
		for i := 0; ; i++ {
			if promotion.IsZero() && promoted != nil && promoted() {
				promotion = time.Now()
			}
			key := fmt.Sprintf("sentinel-%d", i)
			if d, err := h.f.Allow(ctx, key, lookups, 1); err != nil || !d.Allowed {
				t.Fatalf("Allow = %+v, %v", d, err)
			}
			if direct.Exists(ctx, DefaultKeyPrefix+"rl:"+key).Val() == 1 {
				return time.Now(), promotion
			}
			if time.Since(start) > within {
				t.Fatalf("no decision stored on %s within %v (degraded=%v)", srv.Addr(), within, h.f.Degraded())
			}
			time.Sleep(20 * time.Millisecond) // pacing the requests, bounded by the deadline above
		}
	}
	landsOn(master, 5*time.Second, nil)

	so := &goredis.Options{Addr: sentinel, MaxRetries: -1}
	auth.apply(t, so)
	so.Username, so.Password = "", ""
	sc := goredis.NewSentinelClient(so)
	defer sc.Close()
	killed := time.Now()
	master.kill()
	// The Sentinel calls the master down after 500 ms, then promotes the
	// replica, and names it once the replica says it is a master: that is
	// when clients can know of the promotion. The client asks it again
	// once its connection to the old master fails.
	stored, promotion := landsOn(replica, 15*time.Second, func() bool {
		addr, err := sc.GetMasterAddrByName(ctx, "gw").Result()
		return err == nil && len(addr) == 2 && addr[1] == strconv.Itoa(replica.port)
	})
	if promotion.IsZero() {
		promotion = stored // seen stored before seen promoted: within a poll
	}
	after := stored.Sub(promotion)
	t.Logf("replica promoted %v after the master's death; decisions shared again %v after the promotion",
		promotion.Sub(killed).Round(time.Millisecond), after.Round(time.Millisecond))
	if after > 2*time.Second {
		t.Errorf("decisions shared again %v after the promotion, want within 2 s", after)
	}
}

// startSentinel starts a Sentinel (redis-server in sentinel mode) that
// monitors master as "gw", with a quorum of one and a short down-after,
// and returns its address once it names the master.
func startSentinel(t *testing.T, master *redisServer) string {
	t.Helper()
	bin := testenv.Require(t, testenv.RedisServerVar)
	dir := t.TempDir()
	port := freePort(t)
	conf := filepath.Join(dir, "sentinel.conf")
	// Sentinel rewrites its configuration file as it learns: it must be
	// writable, and of its own.
	listen := fmt.Sprintf("port %d\n", port)
	if a := master.auth; a != nil {
		// TLS to clients, to the master and to the replicas, and the ACL
		// user on the servers.
		listen = fmt.Sprintf("port 0\ntls-port %d\ntls-cert-file %s\ntls-key-file %s\ntls-ca-cert-file %s\ntls-replication yes\n",
			port, a.certFile, a.keyFile, a.caFile)
	}
	text := fmt.Sprintf("%sbind 127.0.0.1\ndir %s\nsentinel monitor gw 127.0.0.1 %d 1\nsentinel down-after-milliseconds gw 500\nsentinel failover-timeout gw 5000\n",
		listen, dir, master.port)
	if a := master.auth; a != nil {
		text += fmt.Sprintf("sentinel auth-user gw %s\nsentinel auth-pass gw %s\n", a.user, a.pass)
	}
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "sentinel.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(bin, conf, "--sentinel")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sentinel: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	o := &goredis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 100 * time.Millisecond}
	master.auth.apply(t, o)
	o.Username, o.Password = "", "" // the Sentinel has no ACL users of its own
	s := goredis.NewSentinelClient(o)
	defer s.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		got, err := s.GetMasterAddrByName(ctx, "gw").Result()
		cancel()
		if err == nil && len(got) == 2 && got[1] == strconv.Itoa(master.port) {
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("sentinel on %s does not name the master: %v, %v", addr, got, err)
		}
		time.Sleep(10 * time.Millisecond) // polling a child process, bounded by the deadline
	}
}
