package e2e

// Fleet tests: real gateway processes (this package built once into a
// binary) on loopback, sharing one Redis and one SQLite metadata file, the
// way replicas behind a load balancer share them. They check what a single
// process cannot show: that a limit holds for the fleet rather than per
// replica, and what the fleet does when Redis dies or turns slow.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aigateway/gateway/cmd/gateway/app"
	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/internal/testenv"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/limits"
)

const fleetModelPath = "/api/v1/model/openai/gpt-4o"

func TestFleet(t *testing.T) {
	redisURL := testenv.RedisURL(t)
	bin := buildGatewayBinary(t)
	// A tight limit, checked in Redis on every request, and a wide one
	// whose busy keys a replica may admit from units reserved in Redis
	// ahead (limits.CachedLimiter): both must hold for the fleet, on
	// every topology of Redis.
	for _, c := range []struct {
		name  string
		limit configs.Rate
	}{
		{"SharedLimit", configs.Rate{Requests: 60, Per: time.Minute, Burst: 10}},
		{"SharedWideLimit", configs.Rate{Requests: 600, Per: time.Minute, Burst: 200}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, topo := range redisTopologies {
				t.Run(topo.name, func(t *testing.T) { testFleetSharedLimit(t, bin, topo, c.limit) })
			}
		})
	}
	t.Run("RedisKilled", func(t *testing.T) { testFleetRedisKilled(t, bin) })
	t.Run("ClusterFailover", func(t *testing.T) { testFleetClusterFailover(t, bin) })
	t.Run("RedisSlow", func(t *testing.T) { testFleetRedisSlow(t, bin, redisURL) })
}

// redisTopology points a configuration's redis block at one of the
// Redis deployments the test environment starts, and names the YAML key
// that selects it.
type redisTopology struct {
	name, yamlKey string
	use           func(t *testing.T, r *configs.Redis)
}

var redisTopologies = []redisTopology{
	{"single", "url:", func(t *testing.T, r *configs.Redis) { r.URL = testenv.RedisURL(t) }},
	{"sentinel", "master_name:", func(t *testing.T, r *configs.Redis) { r.Addrs, r.MasterName = testenv.RedisSentinel(t) }},
	{"cluster", "addrs:", func(t *testing.T, r *configs.Redis) { r.Addrs = testenv.RedisClusterAddrs(t) }},
}

// testFleetSharedLimit: one hot key hammered round-robin through three
// processes is admitted no more than one GCRA bucket allows — burst plus
// what refills during the run — not three buckets' worth; every denial is
// the 429 envelope with Retry-After and the RateLimit headers.
func testFleetSharedLimit(t *testing.T, bin string, topo redisTopology, limit configs.Rate) {
	cfg := fleetConfig(t)
	topo.use(t, &cfg.Redis)
	cfg.Redis.KeyPrefix = uniqueKeyPrefix()
	cfg.Redis.ReplicasHint = 3
	// Generous: this test is about sharing, and a busy machine must not
	// push the limiter into its local fallback.
	cfg.Redis.Timeout = 2 * time.Second
	cfg.Limits.Rate.Default = limit
	path := writeFleetConfig(t, cfg)
	if yaml, err := os.ReadFile(path); err != nil || !strings.Contains(string(yaml), topo.yamlKey) {
		t.Fatalf("the gateways' YAML does not say %s (%v):\n%s", topo.yamlKey, err, yaml)
	}
	key := fleetKey(t, path, "hot")
	procs := startFleet(t, bin, path, 3)
	client := fleetClient(t)

	// Six workers, each paced to 50 requests/s for 2 s, spread round-robin
	// over the processes: 600 requests, about two refill intervals.
	const workers, perWorker = 6, 100
	replies := make([][]reply, workers)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(20 * time.Millisecond) // pacing, not synchronisation
			defer tick.Stop()
			for i := range perWorker {
				p := (w + i) % len(procs)
				r := fetch(client, procs[p].base+fleetModelPath, key)
				r.proc = p
				replies[w] = append(replies[w], r)
				<-tick.C
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)

	admitted, denied := 0, make([]int, len(procs))
	for _, rs := range replies {
		for _, r := range rs {
			switch {
			case r.err != nil:
				t.Fatalf("process %d: %v", r.proc, r.err)
			case r.status == http.StatusOK:
				admitted++
				if err := checkRateHeaders(r, limit.Burst); err != nil {
					t.Errorf("process %d, 200: %v", r.proc, err)
				}
			case r.status == http.StatusTooManyRequests:
				denied[r.proc]++
				if err := checkLimited(r, limit.Burst); err != nil {
					t.Errorf("process %d, 429: %v", r.proc, err)
				}
			default:
				t.Fatalf("process %d answered %d: %s", r.proc, r.status, r.body)
			}
		}
	}
	// GCRA's exact bound over a window: the burst, plus one unit per
	// emission interval elapsed, plus one for a window starting on a
	// boundary. Three per-replica buckets would admit about three bursts.
	bound := limit.Burst + int(elapsed.Seconds()*float64(limit.Requests)/limit.Per.Seconds()) + 1
	t.Logf("%d requests in %v through 3 processes: %d admitted (bound %d), denied per process %v",
		workers*perWorker, elapsed.Round(time.Millisecond), admitted, bound, denied)
	if admitted > bound {
		t.Errorf("fleet admitted %d requests of one key in %v, more than burst %d + refill (bound %d)", admitted, elapsed, limit.Burst, bound)
	}
	// Units a replica reserved ahead and did not use are the only way to
	// admit less: at most 3/16 of the burst over all replicas.
	if least := limit.Burst - limit.Burst*3/16; admitted < least {
		t.Errorf("fleet admitted %d requests, less than %d of the burst %d of a fresh key", admitted, least, limit.Burst)
	}
	for i, d := range denied {
		if d == 0 {
			t.Errorf("process %d never denied the exhausted key: it is not using the shared bucket", i)
		}
	}
	for i, p := range procs {
		if n := p.metric(t, client, "gateway_ratelimit_fallbacks_total"); n != 0 {
			t.Errorf("process %d fell back to local limits %v times: the run did not test the shared bucket", i, n)
		}
		if n := p.metric(t, client, `gateway_ratelimit_decisions_total{backend="redis",result="denied"}`); n == 0 {
			t.Errorf("process %d made no denial through Redis", i)
		}
	}
}

// testFleetRedisKilled: Redis is SIGKILLed under lookup load through two
// processes. No lookup gets a 5xx or waits past the Redis timeout, both
// processes fall back to local limits at once and say so on /readyz and
// /metrics; after Redis restarts on the same port both return to it within
// 5 s, and a burst through the two is limited by one shared bucket again.
func testFleetRedisKilled(t *testing.T, bin string) {
	server := testenv.Require(t, testenv.RedisServerVar)
	rd := startRedisServer(t, server)

	limit := configs.Rate{Requests: 20, Per: time.Second, Burst: 200}
	const timeout = 200 * time.Millisecond
	cfg := fleetConfig(t)
	cfg.Redis.URL = fmt.Sprintf("redis://%s/0", rd.addr)
	cfg.Redis.KeyPrefix = uniqueKeyPrefix()
	cfg.Redis.ReplicasHint = 2
	cfg.Redis.Timeout = timeout
	cfg.Limits.Rate.Default = limit
	path := writeFleetConfig(t, cfg)
	const loaders = 8
	loadKeys := make([]string, loaders)
	for i := range loadKeys {
		loadKeys[i] = fleetKey(t, path, fmt.Sprintf("load%d", i))
	}
	burstKey := fleetKey(t, path, "burst")
	freshKeys := []string{fleetKey(t, path, "fresh0"), fleetKey(t, path, "fresh1")}
	procs := startFleet(t, bin, path, 2)
	client := fleetClient(t)

	// Lookup load: each worker its own key at 20 requests/s (within the
	// limit, and within each replica's local share of it while degraded),
	// alternating between the processes.
	load, stopLoad := startLoad(client, procs, loadKeys[:loaders])
	defer stopLoad()

	waitFor(t, 10*time.Second, "lookup load running on Redis", func() bool { return load.ok.Load() >= 40 })
	for i, p := range procs {
		if s := p.readyz(t, client); s != "ok" {
			t.Fatalf("process %d redis readiness %q before the kill, want ok", i, s)
		}
	}

	rd.kill(t)
	killed := time.Now()
	// A request that needs Redis now — its key is new to both processes,
	// so nothing a process knows or holds can answer it — is answered
	// within the Redis timeout from the local fallback, which it engages
	// (unless the load got there first).
	degradedAfter := make([]time.Duration, len(procs))
	for i, p := range procs {
		r := fetch(client, p.base+fleetModelPath, freshKeys[i])
		if r.err != nil || r.status != http.StatusOK {
			t.Errorf("process %d: lookup with a new key after the kill = %d %v %s", i, r.status, r.err, r.body)
		}
		if r.latency > timeout+300*time.Millisecond {
			t.Errorf("process %d: lookup with a new key after the kill took %v, want within the %v Redis timeout (+300ms)", i, r.latency, timeout)
		}
		waitFor(t, time.Second, fmt.Sprintf("process %d degraded after the kill", i), func() bool {
			return p.metric(t, client, "gateway_ratelimit_degraded") == 1
		})
		degradedAfter[i] = time.Since(killed)
		if s := p.readyz(t, client); !strings.HasPrefix(s, "degraded") {
			t.Errorf("process %d redis readiness %q while Redis is dead, want degraded", i, s)
		}
	}
	okAtKill := load.ok.Load()
	waitFor(t, 10*time.Second, "lookups answered while Redis is dead", func() bool { return load.ok.Load() >= okAtKill+40 })

	rd.restart(t)
	restarted := time.Now()
	for i, p := range procs {
		waitFor(t, 5*time.Second, fmt.Sprintf("process %d back on Redis", i), func() bool {
			return p.readyz(t, client) == "ok"
		})
		if d := time.Since(restarted); d > 5*time.Second {
			t.Errorf("process %d back on Redis %v after the restart, want within 5s", i, d)
		}
	}
	recovered := time.Since(restarted)

	// Fleet limits again: a fresh key's whole burst passes through process
	// 0, after which process 1 admits only what refilled meanwhile. On
	// local limits process 0 would stop at half the burst and process 1
	// would admit another half.
	burstStart := time.Now()
	a := burst(client, procs[0], burstKey, limit.Burst, 8)
	b := burst(client, procs[1], burstKey, 100, 8)
	burstTime := time.Since(burstStart)
	if n := a.count(http.StatusOK); n != limit.Burst {
		t.Errorf("process 0 admitted %d of a fresh key's %d requests, want the whole shared burst %d (statuses %v)", n, limit.Burst, limit.Burst, a.statuses())
	}
	refill := int(burstTime.Seconds()*float64(limit.Requests)/limit.Per.Seconds()) + 1
	if n := b.count(http.StatusOK); n > refill {
		t.Errorf("after process 0 drained the key, process 1 admitted %d of 100 in %v, want at most the refill %d: limits are not shared again", n, burstTime, refill)
	}
	if refill >= 100 {
		t.Errorf("the burst took %v: too slow to tell shared from local limits", burstTime)
	}
	for _, r := range b {
		if r.status == http.StatusTooManyRequests {
			if err := checkLimited(r, limit.Burst); err != nil {
				t.Errorf("process 1, 429: %v", err)
			}
		}
	}
	stopLoad()

	t.Logf("degraded (observed) %v after the kill; back on Redis %v after the restart; %d lookups, %d while Redis was down or coming back; slowest %v",
		degradedAfter, recovered.Round(time.Millisecond), load.total.Load(), load.ok.Load()-okAtKill, time.Duration(load.slowest.Load()))
	if n := load.failures.Load(); n > 0 {
		t.Errorf("%d lookups failed across the Redis kill (5xx or transport errors); first: %s", n, load.firstFailure())
	}
	if d := time.Duration(load.slowest.Load()); d > timeout+time.Second {
		t.Errorf("slowest lookup took %v, want at most the Redis timeout %v (+1s)", d, timeout)
	}
	stopAll(t, procs)
	for i, p := range procs {
		logs := p.logText(t)
		if n := strings.Count(logs, "redis unavailable"); n != 1 {
			t.Errorf("process %d logged the fallback %d times, want once", i, n)
		}
		if n := strings.Count(logs, "redis reachable again"); n != 1 {
			t.Errorf("process %d logged the recovery %d times, want once", i, n)
		}
	}
}

// testFleetClusterFailover: a Cluster master is SIGKILLed under lookup
// load through two processes, some of whose keys live on its slots. No
// lookup gets a 5xx or waits past the Redis timeout; each process falls
// back to local limits, and within 2 s of the replica's promotion both
// decide in Redis again: a key of the dead master's slots drained through
// one process is limited through the other.
func testFleetClusterFailover(t *testing.T, bin string) {
	server := testenv.Require(t, testenv.RedisServerVar)
	nodes, cli := startRedisCluster(t, server)
	victim := nodes[0]
	var victimSlots []slotRange
	for _, r := range clusterSlots(cli, victim.addr) {
		if r.addr == victim.addr {
			victimSlots = append(victimSlots, r)
		}
	}
	if len(victimSlots) == 0 {
		t.Fatalf("%s serves no slots", victim.addr)
	}

	limit := configs.Rate{Requests: 20, Per: time.Second, Burst: 200}
	const timeout = 200 * time.Millisecond
	cfg := fleetConfig(t)
	for _, n := range nodes {
		cfg.Redis.Addrs = append(cfg.Redis.Addrs, n.addr)
	}
	cfg.Redis.KeyPrefix = uniqueKeyPrefix()
	cfg.Redis.ReplicasHint = 2
	cfg.Redis.Timeout = timeout
	cfg.Limits.Rate.Default = limit
	path := writeFleetConfig(t, cfg)
	// Load keys on the victim's slots and elsewhere, and a key on its
	// slots for the burst after the failover.
	onVictim := func(id string) bool {
		slot := clusterKeySlot(t, cli, nodes[1].addr, cfg.Redis.KeyPrefix+"rl:"+limits.RequestsKey(limits.ClassDefault, id))
		return slices.ContainsFunc(victimSlots, func(r slotRange) bool { return r.start <= slot && slot <= r.end })
	}
	var victimKeys, otherKeys []string
	var burstKey string
	for _, k := range fleetKeys(t, path, 40) {
		switch {
		case onVictim(k.id) && burstKey == "":
			burstKey = k.token
		case onVictim(k.id) && len(victimKeys) < 4:
			victimKeys = append(victimKeys, k.token)
		case !onVictim(k.id) && len(otherKeys) < 4:
			otherKeys = append(otherKeys, k.token)
		}
	}
	if burstKey == "" || len(victimKeys) < 4 || len(otherKeys) < 4 {
		t.Fatalf("of 40 keys, %d on the victim's slots and %d elsewhere", len(victimKeys)+1, len(otherKeys))
	}
	procs := startFleet(t, bin, path, 2)
	client := fleetClient(t)

	load, stopLoad := startLoad(client, procs, append(victimKeys, otherKeys...))
	defer stopLoad()
	waitFor(t, 10*time.Second, "lookup load running on the Cluster", func() bool { return load.ok.Load() >= 40 })
	for i, p := range procs {
		if s := p.readyz(t, client); s != "ok" {
			t.Fatalf("process %d redis readiness %q before the kill, want ok", i, s)
		}
	}

	victim.kill(t)
	killed := time.Now()
	for i, p := range procs {
		waitFor(t, 2*time.Second, fmt.Sprintf("process %d on local limits after the kill", i), func() bool {
			return p.metric(t, client, "gateway_ratelimit_fallbacks_total") >= 1
		})
	}
	// Promoted: a living master says it serves the victim's first slot.
	var promoted time.Time
	waitFor(t, 15*time.Second, "the victim's replica promoted", func() bool {
		for _, n := range nodes[1:] {
			for _, r := range clusterSlots(cli, n.addr) {
				if r.addr != victim.addr && r.start == victimSlots[0].start {
					promoted = time.Now()
					return true
				}
			}
		}
		return false
	})
	shared := make([]time.Duration, len(procs))
	for i, p := range procs {
		waitFor(t, 10*time.Second, fmt.Sprintf("process %d back on Redis", i), func() bool {
			return p.metric(t, client, "gateway_ratelimit_degraded") == 0
		})
		shared[i] = time.Since(promoted)
	}
	t.Logf("replica promoted %v after the kill; processes back on Redis %v after the promotion",
		promoted.Sub(killed).Round(time.Millisecond), shared)
	for i, d := range shared {
		if d > 2*time.Second {
			t.Errorf("process %d back on Redis %v after the promotion, want within 2 s", i, d)
		}
	}

	// Shared on the promoted master: the whole burst of a key of its
	// slots through process 0, then only the refill through process 1.
	burstStart := time.Now()
	a := burst(client, procs[0], burstKey, limit.Burst, 8)
	b := burst(client, procs[1], burstKey, 100, 8)
	burstTime := time.Since(burstStart)
	if n := a.count(http.StatusOK); n != limit.Burst {
		t.Errorf("process 0 admitted %d of a fresh key's %d requests, want the whole shared burst (statuses %v)", n, limit.Burst, a.statuses())
	}
	refill := int(burstTime.Seconds()*float64(limit.Requests)/limit.Per.Seconds()) + 1
	if n := b.count(http.StatusOK); n > refill {
		t.Errorf("after process 0 drained the key, process 1 admitted %d of 100 in %v, want at most the refill %d: limits are not shared", n, burstTime, refill)
	}
	stopLoad()

	t.Logf("%d lookups, slowest %v", load.total.Load(), time.Duration(load.slowest.Load()))
	if n := load.failures.Load(); n > 0 {
		t.Errorf("%d lookups failed across the Cluster failover (5xx or transport errors); first: %s", n, load.firstFailure())
	}
	if d := time.Duration(load.slowest.Load()); d > timeout+time.Second {
		t.Errorf("slowest lookup took %v, want at most the Redis timeout %v (+1s)", d, timeout)
	}
}

// testFleetRedisSlow: with a proxy adding 2 s to every command, no request
// waits longer than redis.timeout (plus a margin for a busy machine) and
// every one still answers 200; once the proxy is fast again the process
// returns to Redis by itself.
func testFleetRedisSlow(t *testing.T, bin, redisURL string) {
	u, err := url.Parse(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	const delay = 2 * time.Second
	proxy := startSlowProxy(t, u.Host, delay)

	const timeout = 150 * time.Millisecond
	const margin = 600 * time.Millisecond
	cfg := fleetConfig(t)
	pu := *u
	pu.Host = proxy.addr()
	cfg.Redis.URL = pu.String()
	cfg.Redis.KeyPrefix = uniqueKeyPrefix()
	cfg.Redis.Timeout = timeout
	path := writeFleetConfig(t, cfg)
	key := fleetKey(t, path, "slow")
	laterKey := fleetKey(t, path, "later") // first seen after recovery
	p := startFleet(t, bin, path, 1)[0]
	client := fleetClient(t)

	if r := fetch(client, p.base+fleetModelPath, key); r.err != nil || r.status != http.StatusOK {
		t.Fatalf("lookup through a fast proxy = %d %v", r.status, r.err)
	}
	if n := p.metric(t, client, `gateway_ratelimit_decisions_total{backend="redis",result="allowed"}`); n < 1 {
		t.Fatalf("no decision was made through Redis (%v)", n)
	}

	proxy.slow.Store(true)
	// A wave of concurrent requests meets the slow Redis together, then a
	// sequence follows.
	const concurrent, sequential = 16, 20
	replies := make([]reply, concurrent)
	var wg sync.WaitGroup
	for i := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i] = fetch(client, p.base+fleetModelPath, key)
		}()
	}
	wg.Wait()
	for range sequential {
		replies = append(replies, fetch(client, p.base+fleetModelPath, key))
	}
	var slowest time.Duration
	for i, r := range replies {
		slowest = max(slowest, r.latency)
		if r.err != nil || r.status != http.StatusOK {
			t.Errorf("request %d through a slow Redis = %d %v %s, want 200", i, r.status, r.err, r.body)
		}
		if r.latency > timeout+margin {
			t.Errorf("request %d took %v through a Redis %v slow, want at most the timeout %v (+%v)", i, r.latency, delay, timeout, margin)
		}
	}
	t.Logf("slowest of %d requests while Redis answered %v late: %v (redis.timeout %v)", len(replies), delay, slowest, timeout)
	if s := p.readyz(t, client); !strings.HasPrefix(s, "degraded") {
		t.Errorf("redis readiness %q while Redis is slow, want degraded", s)
	}
	if n := p.metric(t, client, "gateway_ratelimit_redis_errors_total"); n < 1 {
		t.Errorf("no Redis error counted while Redis was slow")
	}

	proxy.slow.Store(false)
	waitFor(t, 10*time.Second, "back on Redis once it is fast again", func() bool { return p.readyz(t, client) == "ok" })
	before := p.metric(t, client, `gateway_ratelimit_decisions_total{backend="redis",result="allowed"}`)
	if r := fetch(client, p.base+fleetModelPath, laterKey); r.err != nil || r.status != http.StatusOK {
		t.Fatalf("lookup after recovery = %d %v", r.status, r.err)
	}
	if after := p.metric(t, client, `gateway_ratelimit_decisions_total{backend="redis",result="allowed"}`); after <= before {
		t.Errorf("the lookup after recovery was not decided through Redis (%v -> %v)", before, after)
	}
}

// BenchmarkLookupLimits is where a lookup's time goes with the Redis limit
// on, against the same wiring with limits off: the handler of buildApp
// (logs discarded) served in-process, the limit huge so nothing is denied.
// Take a profile with
//
//	go test -run '^$' -bench LookupLimits -cpuprofile cpu.out ./internal/e2e
//	go tool pprof -top -cum cpu.out
func BenchmarkLookupLimits(b *testing.B) {
	redisURL := testenv.RedisURL(b)
	huge := configs.Rate{Requests: 1 << 30, Per: time.Second, Burst: 1 << 30}
	off := false
	for _, mode := range []string{"off", "redis"} {
		b.Run(mode, func(b *testing.B) {
			cfg := fleetConfig(b)
			if mode == "off" {
				cfg.Limits.Rate.Enabled = &off
			} else {
				cfg.Redis.URL = redisURL
				cfg.Redis.KeyPrefix = uniqueKeyPrefix()
				cfg.Limits.Rate.Default = huge
			}
			key := fleetKey(b, writeFleetConfig(b, cfg), "bench")
			rt, a := buildApp(b, cfg, io.Discard)
			defer rt.Close()
			defer a.Close()
			h := a.Handler()
			b.ReportAllocs()
			b.SetParallelism(32) // many requests in flight, as behind a load balancer
			b.RunParallel(func(pb *testing.PB) {
				req := httptest.NewRequest(http.MethodGet, fleetModelPath, nil)
				req.Header.Set("Authorization", "Bearer "+key)
				for pb.Next() {
					w := httptest.NewRecorder()
					h.ServeHTTP(w, req)
					if w.Code != http.StatusOK {
						b.Fatalf("lookup = %d %s", w.Code, w.Body)
					}
				}
			})
		})
	}
}

// --- gateway processes ---

// buildGatewayBinary returns the gateway command built for the process
// tests, with the race detector when the tests have it (the race-built
// packages are then already in the build cache, and the processes are
// checked for races too). It is built once per test run, however many
// tests ask: linking a race-built binary takes seconds.
func buildGatewayBinary(t *testing.T) string {
	t.Helper()
	return builtBinary(t, "gateway")
}

// builtBinary builds cmd/gateway with the given tags (none for "gateway")
// once per test run, into the run's build directory (see TestMain).
func builtBinary(t *testing.T, name string, tags ...string) string {
	t.Helper()
	binMu.Lock()
	defer binMu.Unlock()
	if b, ok := bins[name]; ok {
		if b.err != nil {
			t.Fatal(b.err)
		}
		return b.path
	}
	path, err := goBuild(name, tags)
	bins[name] = builtBin{path, err}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

type builtBin struct {
	path string
	err  error
}

var (
	binMu    sync.Mutex
	bins     = map[string]builtBin{}
	buildDir string // made by TestMain, removed after the run
)

func goBuild(name string, tags []string) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("the go tool is needed to build the gateway: %w", err)
	}
	out := filepath.Join(buildDir, name)
	args := []string{"build", "-o", out}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	if raceEnabled() {
		args = append(args, "-race")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, append(args, "github.com/aigateway/gateway/cmd/gateway")...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", strings.Join(tags, ","), err, b)
	}
	return out, nil
}

func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// fleetConfig is the embedded default on a fresh directory: the processes of
// one test share its SQLite file (WAL makes that safe) and its file store.
func fleetConfig(t testing.TB) configs.Config {
	t.Helper()
	dir := t.TempDir()
	c := configs.Default()
	c.Server.Listen = "127.0.0.1:0"
	c.Server.ShutdownGrace = 5 * time.Second
	c.Metadata = configs.Metadata{Driver: "sqlite", DSN: filepath.Join(dir, "gateway.db")}
	c.Storage.FS.Dir = filepath.Join(dir, "files")
	catalog, err := filepath.Abs("../../configs/models.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c.Catalog.Path = catalog
	c.Log.Level = "info"
	return c
}

func writeFleetConfig(t testing.TB, cfg configs.Config) string {
	t.Helper()
	return writeConfigIn(t, filepath.Dir(cfg.Metadata.DSN), cfg)
}

// uniqueKeyPrefix keeps one test's buckets apart from every other run's on a
// shared Redis.
func uniqueKeyPrefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "fleet-" + hex.EncodeToString(b[:]) + ":"
}

// fleetKey creates a key in the fleet's shared store, through the runtime
// `gateway keys create` opens on the same configuration file.
func fleetKey(t testing.TB, cfgPath, user string) string {
	t.Helper()
	cfg, err := app.LoadConfig(cfgPath, testGetenv)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := app.Open(context.Background(), cfg, app.Env{Getenv: testGetenv, Logs: io.Discard})
	if err != nil {
		t.Fatalf("open runtime: %v", err)
	}
	defer rt.Close()
	token, _, err := rt.CreateKey(context.Background(), keys.NewKeyRequest{Name: "fleet", User: user, Role: keys.RoleStandard})
	if err != nil {
		t.Fatalf("create key: %v", err)
	}
	return token
}

// fleetKeys creates n keys, each of a user of its own, and returns their
// tokens and public ids.
func fleetKeys(t testing.TB, cfgPath string, n int) []struct{ token, id string } {
	t.Helper()
	cfg, err := app.LoadConfig(cfgPath, testGetenv)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := app.Open(context.Background(), cfg, app.Env{Getenv: testGetenv, Logs: io.Discard})
	if err != nil {
		t.Fatalf("open runtime: %v", err)
	}
	defer rt.Close()
	out := make([]struct{ token, id string }, n)
	for i := range out {
		token, key, err := rt.CreateKey(context.Background(), keys.NewKeyRequest{Name: "fleet", User: fmt.Sprintf("user%d", i), Role: keys.RoleStandard})
		if err != nil {
			t.Fatalf("create key: %v", err)
		}
		out[i].token, out[i].id = token, key.ID
	}
	return out
}

// gatewayProc is one `gateway serve` process.
type gatewayProc struct {
	cmd     *exec.Cmd
	logPath string
	base    string // http://host:port
	exited  chan struct{}
	waitErr error
	stopped bool
}

// startFleet starts n processes on one config (each listens on a port of
// its own) and waits until all of them answer /healthz.
func startFleet(t *testing.T, bin, cfgPath string, n int) []*gatewayProc {
	t.Helper()
	procs := make([]*gatewayProc, n)
	for i := range procs {
		procs[i] = launchGateway(t, bin, cfgPath, fmt.Sprintf("gateway%d.log", i))
	}
	// Stop them together: each takes a moment to shut down gracefully.
	t.Cleanup(func() { stopAll(t, procs) })
	for _, p := range procs {
		p.waitReady(t)
	}
	return procs
}

func stopAll(t *testing.T, procs []*gatewayProc) {
	t.Helper()
	for _, p := range procs {
		p.signalStop()
	}
	for _, p := range procs {
		p.stop(t)
	}
}

// launchGateway starts bin serving cfgPath, logging to logName beside it,
// with env (KEY=value) added to this process's environment.
func launchGateway(t *testing.T, bin, cfgPath, logName string, env ...string) *gatewayProc {
	t.Helper()
	logPath := filepath.Join(filepath.Dir(cfgPath), logName)
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() // the child holds its own descriptor
	cmd := exec.Command(bin, "serve", "--config", cfgPath)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(append(os.Environ(), "GATEWAY_BYOK_ENCRYPTION_KEY="+testSealingKey), env...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start gateway: %v", err)
	}
	p := &gatewayProc{cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.stop(t) })
	return p
}

// waitReady learns the port from the "gateway listening" log line (the log
// is flushed at least every second), then waits for /healthz.
func (p *gatewayProc) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for p.base == "" {
		if addr := p.listeningAddr(); addr != "" {
			p.base = "http://" + addr
			break
		}
		p.checkAlive(t, deadline, "listen")
		time.Sleep(20 * time.Millisecond) // poll interval, bounded by the deadline
	}
	for {
		resp, err := http.Get(p.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		p.checkAlive(t, deadline, "answer /healthz")
		time.Sleep(20 * time.Millisecond) // poll interval, bounded by the deadline
	}
}

func (p *gatewayProc) checkAlive(t *testing.T, deadline time.Time, what string) {
	t.Helper()
	select {
	case <-p.exited:
		t.Fatalf("gateway exited before it could %s: %v\n%s", what, p.waitErr, p.logText(t))
	default:
	}
	if time.Now().After(deadline) {
		t.Fatalf("gateway did not %s in time\n%s", what, p.logText(t))
	}
}

func (p *gatewayProc) listeningAddr() string {
	f, err := os.Open(p.logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var line struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "gateway listening" {
			return line.Addr
		}
	}
	return ""
}

func (p *gatewayProc) logText(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// stop sends SIGTERM (the graceful path), waits, and kills what lingers.
// A data race found in the process fails the test.
func (p *gatewayProc) stop(t *testing.T) {
	t.Helper()
	if p.stopped {
		return
	}
	p.stopped = true
	p.signalStop()
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		t.Errorf("gateway did not stop within 20s of SIGTERM")
	}
	if logs := p.logText(t); strings.Contains(logs, "DATA RACE") {
		t.Errorf("the gateway process reported a data race:\n%s", logs)
	}
}

func (p *gatewayProc) signalStop() {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
}

// readyz returns the "redis" entry of /readyz's checks ("" when absent).
func (p *gatewayProc) readyz(t *testing.T, c *http.Client) string {
	t.Helper()
	resp, err := c.Get(p.base + "/readyz")
	if err != nil {
		t.Fatalf("readyz: %v", err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("readyz body: %v", err)
	}
	return body.Checks["redis"]
}

// metric returns the value of one series from /metrics, written as it
// appears there (name plus labels in order); 0 when it is absent.
func (p *gatewayProc) metric(t *testing.T, c *http.Client, series string) float64 {
	t.Helper()
	resp, err := c.Get(p.base + "/metrics")
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("metric %s: %v", series, err)
			}
			return f
		}
	}
	return 0
}

// --- requests ---

type reply struct {
	proc    int
	status  int
	header  http.Header
	body    []byte
	latency time.Duration
	err     error
}

func fleetClient(t *testing.T) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func fetch(c *http.Client, url, key string) reply {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return reply{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+key)
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return reply{err: err, latency: time.Since(start)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: body, latency: time.Since(start), err: err}
}

type replySet []reply

// burst sends n requests of key through p from `parallel` goroutines at
// once, as fast as they go.
func burst(c *http.Client, p *gatewayProc, key string, n, parallel int) replySet {
	out := make(replySet, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				out[i] = fetch(c, p.base+fleetModelPath, key)
			}
		}()
	}
	wg.Wait()
	return out
}

func (rs replySet) count(status int) int {
	n := 0
	for _, r := range rs {
		if r.err == nil && r.status == status {
			n++
		}
	}
	return n
}

func (rs replySet) statuses() map[string]int {
	m := map[string]int{}
	for _, r := range rs {
		if r.err != nil {
			m["error"]++
		} else {
			m[strconv.Itoa(r.status)]++
		}
	}
	return m
}

// checkRateHeaders checks the RateLimit headers every limited response
// carries.
func checkRateHeaders(r reply, burst int) error {
	if got := r.header.Get("RateLimit-Limit"); got != strconv.Itoa(burst) {
		return fmt.Errorf("RateLimit-Limit %q, want %d", got, burst)
	}
	rem, err := strconv.Atoi(r.header.Get("RateLimit-Remaining"))
	if err != nil || rem < 0 || rem > burst {
		return fmt.Errorf("RateLimit-Remaining %q, want 0..%d", r.header.Get("RateLimit-Remaining"), burst)
	}
	if reset, err := strconv.Atoi(r.header.Get("RateLimit-Reset")); err != nil || reset < 0 {
		return fmt.Errorf("RateLimit-Reset %q, want whole seconds", r.header.Get("RateLimit-Reset"))
	}
	return nil
}

// checkLimited checks a 429: the envelope, Retry-After, and an exhausted
// bucket in the RateLimit headers.
func checkLimited(r reply, burst int) error {
	if err := checkRateHeaders(r, burst); err != nil {
		return err
	}
	if got := r.header.Get("RateLimit-Remaining"); got != "0" {
		return fmt.Errorf("RateLimit-Remaining %q on a denial, want 0", got)
	}
	if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 {
		return fmt.Errorf("Retry-After %q, want whole seconds >= 1", r.header.Get("Retry-After"))
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("Content-Type %q, want application/json", ct)
	}
	var env struct {
		Error struct {
			Code    int            `json:"code"`
			Message string         `json:"message"`
			Meta    map[string]any `json:"metadata"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &env); err != nil {
		return fmt.Errorf("body %q is not the error envelope: %v", r.body, err)
	}
	if env.Error.Code != http.StatusTooManyRequests || env.Error.Message != "Rate limit exceeded" {
		return fmt.Errorf("envelope %s, want code 429 and \"Rate limit exceeded\"", r.body)
	}
	return nil
}

// loadRun is paced lookup load that records every failure: a 5xx or a
// transport error (429 is an answer, not a failure).
// startLoad runs one lookup worker per key, each at 20 requests/s,
// alternating between the processes; stop ends them (once, however often
// it is called) and waits for them.
func startLoad(client *http.Client, procs []*gatewayProc, keys []string) (load *loadRun, stop func()) {
	load = &loadRun{stop: make(chan struct{})}
	for w, key := range keys {
		load.wg.Add(1)
		go load.worker(client, procs, key, 50*time.Millisecond, w)
	}
	var once sync.Once
	return load, func() {
		once.Do(func() {
			close(load.stop)
			load.wg.Wait()
		})
	}
}

type loadRun struct {
	stop     chan struct{}
	wg       sync.WaitGroup
	total    atomic.Int64
	ok       atomic.Int64
	failures atomic.Int64
	slowest  atomic.Int64 // nanoseconds
	mu       sync.Mutex
	first    string
}

func (l *loadRun) worker(c *http.Client, procs []*gatewayProc, key string, every time.Duration, w int) {
	defer l.wg.Done()
	tick := time.NewTicker(every) // pacing, not synchronisation
	defer tick.Stop()
	for i := w; ; i++ {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		r := fetch(c, procs[i%len(procs)].base+fleetModelPath, key)
		l.total.Add(1)
		for {
			s := l.slowest.Load()
			if int64(r.latency) <= s || l.slowest.CompareAndSwap(s, int64(r.latency)) {
				break
			}
		}
		switch {
		case r.err != nil || r.status >= 500:
			l.failures.Add(1)
			l.mu.Lock()
			if l.first == "" {
				l.first = fmt.Sprintf("process %d: %d %v %s", i%len(procs), r.status, r.err, r.body)
			}
			l.mu.Unlock()
		case r.status == http.StatusOK:
			l.ok.Add(1)
		}
	}
}

func (l *loadRun) firstFailure() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for: %s", within, what)
		}
		time.Sleep(10 * time.Millisecond) // poll interval, bounded by the deadline
	}
}

// --- a Redis of our own, to kill ---

type redisServer struct {
	bin, dir, addr string
	args           []string // more arguments of redis-server
	cmd            *exec.Cmd
	exited         chan struct{}
}

// startRedisServer starts redis-server on a free loopback port, with args
// added. It is killed when the test ends.
func startRedisServer(t *testing.T, bin string, args ...string) *redisServer {
	t.Helper()
	r := &redisServer{bin: bin, dir: t.TempDir(), args: args}
	for attempt := 0; ; attempt++ {
		r.addr = freeLoopbackAddr(t)
		err := r.start()
		if err == nil {
			break
		}
		if attempt == 2 {
			t.Fatalf("redis-server: %v", err)
		}
	}
	t.Cleanup(func() { r.stopProcess() })
	return r
}

func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// start runs redis-server on r.addr and waits until it answers PING.
func (r *redisServer) start() error {
	_, port, _ := net.SplitHostPort(r.addr)
	logf, err := os.OpenFile(filepath.Join(r.dir, "redis.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(r.bin, append([]string{"--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no",
		"--dir", r.dir, "--daemonize", "no"}, r.args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	r.cmd, r.exited = cmd, exited
	deadline := time.Now().Add(10 * time.Second)
	for !redisPings(r.addr) {
		select {
		case <-exited:
			b, _ := os.ReadFile(filepath.Join(r.dir, "redis.log"))
			return fmt.Errorf("exited on %s:\n%s", r.addr, b)
		default:
		}
		if time.Now().After(deadline) {
			r.stopProcess()
			return fmt.Errorf("no PONG from %s within 10s", r.addr)
		}
		time.Sleep(10 * time.Millisecond) // poll interval, bounded by the deadline
	}
	return nil
}

func redisPings(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	b := make([]byte, 7)
	n, _ := io.ReadFull(c, b)
	return string(b[:n]) == "+PONG\r\n"
}

// kill sends SIGKILL: no shutdown, connections cut as by a crash.
func (r *redisServer) kill(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill redis: %v", err)
	}
	<-r.exited
}

// restart starts a new server on the same port (empty: nothing was saved).
func (r *redisServer) restart(t *testing.T) {
	t.Helper()
	if err := r.start(); err != nil {
		t.Fatalf("restart redis on %s: %v", r.addr, err)
	}
}

func (r *redisServer) stopProcess() {
	if r.cmd == nil {
		return
	}
	select {
	case <-r.exited:
	default:
		_ = r.cmd.Process.Kill()
		<-r.exited
	}
}

// --- a Redis Cluster of our own, to kill a master of ---

// startRedisCluster starts three masters, each with a replica, joins them
// into a Cluster with the redis-cli beside bin, and returns its nodes
// (masters first) and that redis-cli once every slot is served and every
// replica is in sync.
func startRedisCluster(t *testing.T, bin string) ([]*redisServer, string) {
	t.Helper()
	cli := filepath.Join(filepath.Dir(bin), "redis-cli")
	nodes := make([]*redisServer, 6)
	addrs := make([]string, len(nodes))
	for i := range nodes {
		_, bus, _ := net.SplitHostPort(freeLoopbackAddr(t))
		// A node promotes its replica 1 s after its master stops
		// answering, whatever the replica's lag; the bus port is picked
		// free, where port+10000 may be taken; replicas sync at once,
		// where a master waits 5 s by default.
		nodes[i] = startRedisServer(t, bin, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "1000", "--cluster-replica-validity-factor", "0", "--cluster-port", bus,
			"--repl-diskless-sync-delay", "0")
		addrs[i] = nodes[i].addr
	}
	out, err := exec.Command(cli, append(append([]string{"--cluster", "create"}, addrs...),
		"--cluster-replicas", "1", "--cluster-yes")...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, a := range addrs {
		waitFor(t, 20*time.Second, "cluster node "+a+" ready", func() bool {
			_, port, _ := net.SplitHostPort(a)
			info, _ := exec.Command(cli, "-p", port, "cluster", "info").Output()
			repl, _ := exec.Command(cli, "-p", port, "info", "replication").Output()
			return strings.Contains(string(info), "cluster_state:ok") &&
				(strings.Contains(string(repl), "master_link_status:up") ||
					strings.Contains(string(repl), "role:master") && !strings.Contains(string(repl), "connected_slaves:0"))
		})
	}
	return nodes, cli
}

// slotRange is a range of slots and the master serving them.
type slotRange struct {
	addr       string
	start, end int
}

// clusterSlots returns the slot ranges of the masters not known to have
// failed, as the node at ask sees them (CLUSTER NODES).
func clusterSlots(cli, ask string) []slotRange {
	_, port, _ := net.SplitHostPort(ask)
	out, _ := exec.Command(cli, "-p", port, "cluster", "nodes").Output()
	var res []slotRange
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || !strings.Contains(f[2], "master") || strings.Contains(f[2], "fail") {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		for _, r := range f[8:] {
			lo, hi, ok := strings.Cut(r, "-")
			if !ok {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 == nil && err2 == nil { // not a slot being migrated, [n->-id]
				res = append(res, slotRange{addr, a, b})
			}
		}
	}
	return res
}

// clusterKeySlot asks the node at ask for key's slot.
func clusterKeySlot(t *testing.T, cli, ask, key string) int {
	t.Helper()
	_, port, _ := net.SplitHostPort(ask)
	out, err := exec.Command(cli, "-p", port, "cluster", "keyslot", key).Output()
	if err != nil {
		t.Fatalf("cluster keyslot: %v", err)
	}
	slot, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("cluster keyslot %q: %q", key, out)
	}
	return slot
}

// --- a proxy that makes Redis slow ---

// slowProxy forwards TCP to target; while slow is set, every chunk from
// the client waits delay before it is passed on, so every command's reply
// comes that much later. Cut makes the server look down: every connection
// is closed and new ones are closed as soon as they are accepted.
type slowProxy struct {
	ln     net.Listener
	target string
	delay  time.Duration
	slow   atomic.Bool
	down   atomic.Bool
	done   chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
}

func startSlowProxy(t *testing.T, target string, delay time.Duration) *slowProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &slowProxy{ln: ln, target: target, delay: delay, done: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *slowProxy) addr() string { return p.ln.Addr().String() }

func (p *slowProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.down.Load() {
			client.Close()
			continue
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		if !p.track(client, server) {
			return
		}
		p.wg.Add(2)
		go p.pipe(server, client, true)
		go p.pipe(client, server, false)
	}
}

func (p *slowProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		for _, c := range cs {
			c.Close()
		}
		return false
	default:
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

// pipe copies src to dst, delaying each chunk while slow (when delayed is
// set); when either side ends it closes both.
func (p *slowProxy) pipe(dst, src net.Conn, delayed bool) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if delayed && p.slow.Load() {
				select {
				case <-time.After(p.delay): // the injected latency
				case <-p.done:
					return
				}
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// cut closes every connection and refuses new ones until restore.
func (p *slowProxy) cut() {
	p.down.Store(true)
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

func (p *slowProxy) restore() { p.down.Store(false) }

func (p *slowProxy) close() {
	p.mu.Lock()
	select {
	case <-p.done:
	default:
		close(p.done)
	}
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}
