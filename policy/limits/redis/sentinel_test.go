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
// replica the Sentinel promotes once the master dies.
func TestSentinelFollowsTheFailover(t *testing.T) {
	master := startRedisServer(t)
	replica := startRedisServer(t, "--replicaof", "127.0.0.1", strconv.Itoa(master.port))
	sentinel := startSentinel(t, master)

	const timeout = 200 * time.Millisecond
	client, err := NewClient(ClientOptions{Addrs: []string{sentinel}, MasterName: "gw", Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	h := newFailoverHarness(t, client, FailoverOptions{ReplicasHint: 2, Timeout: timeout, ProbeInterval: 50 * time.Millisecond})
	ctx := context.Background()
	lookups := limits.Limit{Rate: 1000, Per: time.Second, Burst: 1000}

	// landsOn asserts that, within the deadline, a decision is stored in
	// the server at addr.
	landsOn := func(addr string, within time.Duration) time.Duration {
		t.Helper()
		direct := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1})
		defer direct.Close()
		start := time.Now()
		for i := 0; ; i++ {
			key := fmt.Sprintf("sentinel-%d", i)
			if d, err := h.f.Allow(ctx, key, lookups, 1); err != nil || !d.Allowed {
				t.Fatalf("Allow = %+v, %v", d, err)
			}
			if direct.Exists(ctx, DefaultKeyPrefix+"rl:"+key).Val() == 1 {
				return time.Since(start)
			}
			if time.Since(start) > within {
				t.Fatalf("no decision stored on %s within %v (degraded=%v)", addr, within, h.f.Degraded())
			}
			h.waitState(t, false, within)
			time.Sleep(20 * time.Millisecond) // pacing the probe requests, bounded by the deadline above
		}
	}
	landsOn(master.Addr(), 5*time.Second)

	master.kill()
	// The Sentinel calls the master down after 500 ms, then promotes the
	// replica; the client asks it again once its connection to the old
	// master fails.
	took := landsOn(replica.Addr(), 15*time.Second)
	t.Logf("decisions on the promoted replica %v after the master's death", took)
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
	if err := os.WriteFile(conf, fmt.Appendf(nil,
		"port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor gw 127.0.0.1 %d 1\nsentinel down-after-milliseconds gw 500\nsentinel failover-timeout gw 5000\n",
		port, dir, master.port), 0o600); err != nil {
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
	s := goredis.NewSentinelClient(&goredis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
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
