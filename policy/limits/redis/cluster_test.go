package redis

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/aigateway/gateway/internal/testenv"
	"github.com/aigateway/gateway/policy/limits"
)

// TestClusterFollowsTheFailover: when a Cluster master dies, the limiter's
// decisions for keys of its slots land on the replica promoted in its
// place within 2 s of the promotion, where go-redis, left to itself,
// kept dialling the dead address until its next periodic reload of the
// slot map.
func TestClusterFollowsTheFailover(t *testing.T) {
	nodes := startCluster(t, 3)
	victim := nodes[0]

	client, h := clusterLimiter(t, nodes[1])
	ctx := context.Background()
	// A decision stays stored for an hour: long enough to be looked for.
	lookups := limits.Limit{Rate: 1, Per: time.Hour, Burst: 1000}

	// Keys whose slots the victim serves.
	slots := masterSlots(t, client, victim.Addr())
	var keys []string
	for i := 0; len(keys) < 50; i++ {
		key := fmt.Sprintf("cluster-%d", i)
		slot, err := client.ClusterKeySlot(ctx, DefaultKeyPrefix+"rl:"+key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if slots(slot) {
			keys = append(keys, key)
		}
	}
	// The probe of a failed call goes to that call's slot, whatever the
	// key's hash tag.
	for _, at := range []string{DefaultKeyPrefix + "rl:" + keys[0], "gw:if:{ws-1}:uploads"} {
		want := client.ClusterKeySlot(ctx, at).Val()
		if got := client.ClusterKeySlot(ctx, DefaultKeyPrefix+"rl:"+probeKeyAt(at)).Val(); got != want {
			t.Errorf("probe of %q in slot %d, the key's is %d", at, got, want)
		}
	}

	// stored reports whether the decision on key is in the cluster, asked
	// of a client that reads the slot map afresh.
	stored := func(key string) bool {
		fresh := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{nodes[1].Addr()}, MaxRetries: -1})
		defer fresh.Close()
		return fresh.Exists(ctx, DefaultKeyPrefix+"rl:"+key).Val() == 1
	}
	if d, err := h.f.Allow(ctx, keys[0], lookups, 1); err != nil || !d.Allowed || !stored(keys[0]) {
		t.Fatalf("before the failover: Allow = %+v, %v; stored %v", d, err, stored(keys[0]))
	}

	killed := time.Now()
	victim.kill()
	promoted := time.Time{}
	for i := 1; ; i++ {
		if time.Since(killed) > 30*time.Second {
			t.Fatalf("no decision on the dead master's slots stored within 30 s (promoted after %v)", promoted.Sub(killed))
		}
		if promoted.IsZero() && victimSlotsServed(ctx, nodes[1:], slots) {
			promoted = time.Now()
		}
		key := keys[i%len(keys)]
		if d, err := h.f.Allow(ctx, key, lookups, 1); err != nil || !d.Allowed {
			t.Fatalf("Allow = %+v, %v", d, err)
		}
		if !promoted.IsZero() && !h.f.Degraded() && stored(key) {
			t.Logf("replica promoted %v after the kill; decisions shared again %v after the promotion",
				promoted.Sub(killed).Round(time.Millisecond), time.Since(promoted).Round(time.Millisecond))
			if after := time.Since(promoted); after > 2*time.Second {
				t.Errorf("decisions shared again %v after the promotion, want within 2 s", after)
			}
			return
		}
		time.Sleep(20 * time.Millisecond) // pacing the requests, bounded by the deadline above
	}
}

// clusterLimiter returns a Cluster client seeded with seed, closed at the
// end of the test, and a failover limiter over it that probes often.
func clusterLimiter(t *testing.T, seed *redisServer) (goredis.UniversalClient, *failoverHarness) {
	t.Helper()
	const timeout = 200 * time.Millisecond
	client, err := NewClient(ClientOptions{Addrs: []string{seed.Addr()}, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client, newFailoverHarness(t, client, FailoverOptions{ReplicasHint: 2, Timeout: timeout, ProbeInterval: 50 * time.Millisecond})
}

// masterSlots returns a test of whether a slot is served by the master at
// addr.
func masterSlots(t *testing.T, client goredis.UniversalClient, addr string) func(int64) bool {
	t.Helper()
	ranges, err := client.(*goredis.ClusterClient).ClusterSlots(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	var mine []goredis.ClusterSlot
	for _, r := range ranges {
		if len(r.Nodes) > 0 && r.Nodes[0].Addr == addr {
			mine = append(mine, r)
		}
	}
	if len(mine) == 0 {
		t.Fatalf("%s serves no slots: %+v", addr, ranges)
	}
	return func(slot int64) bool {
		return slices.ContainsFunc(mine, func(r goredis.ClusterSlot) bool { return int64(r.Start) <= slot && slot <= int64(r.End) })
	}
}

// victimSlotsServed reports whether a living node now says a master
// other than the dead one serves the first of its slots.
func victimSlotsServed(ctx context.Context, living []*redisServer, slots func(int64) bool) bool {
	for _, n := range living {
		c := goredis.NewClient(&goredis.Options{Addr: n.Addr(), MaxRetries: -1})
		ranges, err := c.ClusterSlots(ctx).Result()
		c.Close()
		if err != nil {
			continue
		}
		for _, r := range ranges {
			if slots(int64(r.Start)) && len(r.Nodes) > 0 && slices.ContainsFunc(living, func(l *redisServer) bool { return l.Addr() == r.Nodes[0].Addr }) {
				return true
			}
		}
	}
	return false
}

// startCluster starts a Redis Cluster of masters masters, each with one
// replica, from GATEWAY_TEST_REDIS_SERVER (and the redis-cli beside it),
// and returns its nodes, masters first, once every slot is served.
func startCluster(t *testing.T, masters int, args ...string) []*redisServer {
	t.Helper()
	return startAuthCluster(t, nil, masters, 1, args...)
}

// startAuthCluster is startCluster with replicas replicas per master
// (0: none), every node taking TLS only and auth's user alone when auth
// is not nil.
func startAuthCluster(t *testing.T, auth *tlsAuth, masters, replicas int, args ...string) []*redisServer {
	t.Helper()
	bin := testenv.Require(t, testenv.RedisServerVar)
	cli := filepath.Join(filepath.Dir(bin), "redis-cli")
	if _, err := os.Stat(cli); err != nil {
		t.Fatalf("redis-cli beside %s: %v", bin, err)
	}
	nodes := make([]*redisServer, (1+replicas)*masters)
	addrs := make([]string, len(nodes))
	for i := range nodes {
		nodes[i] = startAuthRedisServer(t, auth, append([]string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "1000", "--cluster-replica-validity-factor", "0"}, args...)...)
		addrs[i] = nodes[i].Addr()
	}
	// --cluster create makes the first masters addresses masters and the
	// rest their replicas.
	create := append(append([]string{"--cluster", "create"}, addrs...),
		"--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if auth != nil {
		// The password reaches redis-cli through its environment, not its
		// command line.
		create = append([]string{"--tls", "--cacert", auth.caFile, "--cert", auth.certFile, "--key", auth.keyFile,
			"--user", auth.user}, create...)
	}
	cmd := exec.Command(cli, create...)
	if auth != nil {
		cmd.Env = append(os.Environ(), "REDISCLI_AUTH="+auth.pass)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, n := range nodes {
		c := n.client()
		for {
			info, err := c.ClusterInfo(context.Background()).Result()
			role, _ := c.Do(context.Background(), "ROLE").Slice()
			if err == nil && strings.Contains(info, "cluster_state:ok") && replicaInSync(role) {
				break
			}
			if time.Now().After(deadline) {
				c.Close()
				t.Fatalf("cluster node %s not ready: %q, %v", n.Addr(), info, err)
			}
			time.Sleep(20 * time.Millisecond) // polling child processes, bounded by the deadline
		}
		c.Close()
	}
	return nodes
}

// replicaInSync reports whether a ROLE answer is a master's, or a
// replica's that is connected to its master.
func replicaInSync(role []any) bool {
	if len(role) == 0 {
		return false
	}
	if role[0] == "master" {
		return true
	}
	return len(role) >= 4 && role[0] == "slave" && role[3] == "connected"
}

// TestClusterShardOutageDoesNotFlip: with one shard down (master and
// replica) in a Cluster that serves the slots it still covers, the limiter
// goes local once and stays so until that shard answers, where it flipped
// between Redis and local limits on every probe: a probe on a fixed key
// found its healthy shard and switched back, and the next call on the dead
// shard failed again.
func TestClusterShardOutageDoesNotFlip(t *testing.T) {
	nodes := startCluster(t, 3, "--cluster-require-full-coverage", "no")
	victim := nodes[0]

	client, h := clusterLimiter(t, nodes[1])
	ctx := context.Background()
	lookups := limits.Limit{Rate: 1000, Per: time.Second, Burst: 1000}

	// One key on the dead shard and one on each live shard.
	slots := masterSlots(t, client, victim.Addr())
	var dead string
	var live []string
	for i := 0; dead == "" || len(live) < 4; i++ {
		key := fmt.Sprintf("shard-%d", i)
		if slots(client.ClusterKeySlot(ctx, DefaultKeyPrefix+"rl:"+key).Val()) {
			dead = cmp.Or(dead, key)
		} else {
			live = append(live, key)
		}
	}
	for _, n := range nodes {
		if n == victim || replicaOf(t, n) == victim.port {
			n.kill()
		}
	}

	// Calls on every shard for 2 s, 40 probe intervals.
	end := time.Now().Add(2 * time.Second)
	for i := 0; time.Now().Before(end); i++ {
		key := dead
		if i%5 != 0 {
			key = live[i%len(live)]
		}
		if d, err := h.f.Allow(ctx, key, lookups, 1); err != nil || !d.Allowed {
			t.Fatalf("Allow = %+v, %v", d, err)
		}
		time.Sleep(5 * time.Millisecond) // pacing the calls over the window
	}
	if down, up := h.changes(); down != 1 || up != 0 || !h.f.Degraded() {
		t.Errorf("during a shard's outage the limiter went local %d times and back %d times (degraded now %v), want once and not back",
			down, up, h.f.Degraded())
	}
}

// replicaOf returns the port of the master node n replicates, or 0.
func replicaOf(t *testing.T, n *redisServer) int {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: n.Addr(), MaxRetries: -1})
	defer c.Close()
	role, err := c.Do(context.Background(), "ROLE").Slice()
	if err != nil {
		t.Fatal(err)
	}
	if len(role) < 3 || role[0] != "slave" {
		return 0
	}
	port, _ := role[2].(int64)
	return int(port)
}

// TestClusterReshardUnderLoad: while slots move between masters (redis-cli
// --cluster reshard, MIGRATE key by key), decisions on keys of those slots
// (and in-flight leases) follow ASK and MOVED to wherever the key is: none
// fails, and every key is charged exactly once per decision, on the master
// that holds it afterwards.
func TestClusterReshardUnderLoad(t *testing.T) {
	nodes := startCluster(t, 3)
	from, to := nodes[0], nodes[1]
	client, err := NewClient(ClientOptions{Addrs: []string{to.Addr()}, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()
	const prefix = "reshard:"
	l := NewLimiter(client, prefix)
	leases := NewInFlight(client, "reshard-if:")
	daily := limits.Limit{Rate: 1, Per: 24 * time.Hour, Burst: 1 << 20}

	// Keys in the first slots of the source, which the reshard moves
	// first; each charged once so that there are keys to migrate. A hash
	// tag puts a key's bucket and its leases in one slot.
	const moved = 300
	var keys []string
	for i := 0; len(keys) < 64; i++ {
		key := fmt.Sprintf("{k%d}", i)
		if slot := client.ClusterKeySlot(ctx, prefix+key).Val(); slot < moved {
			keys = append(keys, key)
		}
	}
	if first := masterSlots(t, client, from.Addr()); !first(0) || !first(moved-1) {
		t.Fatalf("%s does not serve slots 0-%d", from.Addr(), moved-1)
	}
	charged := make([]atomic.Int64, len(keys))
	for i, k := range keys {
		if _, err := l.Allow(ctx, k, daily, 1); err != nil {
			t.Fatal(err)
		}
		charged[i].Add(1)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var calls, failures atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		failures.Add(1)
		firstErr.CompareAndSwap(nil, err.Error())
	}
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				a, b := i%len(keys), (i*7+3)%len(keys)
				calls.Add(1)
				if w == 0 && i%4 == 0 {
					// A lease of the key's own slot, taken and given back.
					release, ok, err := leases.Acquire(ctx, keys[a], 1<<20, time.Minute)
					if err != nil || !ok {
						fail(fmt.Errorf("Acquire = %v, %w", ok, err))
						continue
					}
					release()
					continue
				}
				if w%2 == 0 || a == b {
					if _, err := l.Allow(ctx, keys[a], daily, 1); err != nil {
						fail(err)
						continue
					}
					charged[a].Add(1)
					continue
				}
				checks := []limits.Check{{Key: keys[a], Limit: daily, Cost: 1}, {Key: keys[b], Limit: daily, Cost: 1}}
				if _, err := l.AllowAll(ctx, checks); err != nil {
					fail(err)
					continue
				}
				charged[a].Add(1)
				charged[b].Add(1)
			}
		}()
	}
	id := func(n *redisServer) string {
		c := goredis.NewClient(&goredis.Options{Addr: n.Addr(), MaxRetries: -1})
		defer c.Close()
		return c.Do(ctx, "CLUSTER", "MYID").Val().(string)
	}
	cli := filepath.Join(filepath.Dir(testenv.Require(t, testenv.RedisServerVar)), "redis-cli")
	start := time.Now()
	out, err := exec.Command(cli, "--cluster", "reshard", to.Addr(), "--cluster-from", id(from), "--cluster-to", id(to),
		"--cluster-slots", fmt.Sprint(moved), "--cluster-yes").CombinedOutput()
	took := time.Since(start)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("redis-cli --cluster reshard: %v\n%s", err, out)
	}
	t.Logf("%d slots moved in %v under %d decisions, %d failed", moved, took.Round(time.Millisecond), calls.Load(), failures.Load())
	if n := failures.Load(); n > 0 {
		t.Errorf("%d of %d decisions failed during the reshard; first: %v", n, calls.Load(), firstErr.Load())
	}
	direct := goredis.NewClient(&goredis.Options{Addr: to.Addr(), MaxRetries: -1})
	defer direct.Close()
	for i, k := range keys {
		if direct.Exists(ctx, prefix+k).Val() != 1 {
			t.Errorf("%s is not on the master its slot moved to", k)
			continue
		}
		d, err := NewLimiter(direct, prefix).Allow(ctx, k, daily, 0)
		if err != nil {
			t.Fatal(err)
		}
		if want := daily.Burst - int(charged[i].Load()); d.Remaining != want {
			t.Errorf("%s: %d remain after %d decisions, want %d", k, d.Remaining, charged[i].Load(), want)
		}
	}
}
