package redis

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy/limits"
	"github.com/aigateway/gateway/policy/limits/limitertest"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// failoverHarness is a Failover with its logs, metrics and state
// changes observable.
type failoverHarness struct {
	f       *Failover
	reg     *prometheus.Registry
	logs    *observer.ObservedLogs
	changed chan struct{} // signalled after every state change

	mu      sync.Mutex
	history []bool // every state change, in order
}

func newFailoverHarness(t *testing.T, client goredis.UniversalClient, opts FailoverOptions) *failoverHarness {
	t.Helper()
	core, logs := observer.New(zapcore.InfoLevel)
	h := &failoverHarness{reg: prometheus.NewRegistry(), logs: logs, changed: make(chan struct{}, 1)}
	opts.Logger = zap.New(core)
	opts.Registerer = h.reg
	opts.OnStateChange = func(d bool) {
		h.mu.Lock()
		h.history = append(h.history, d)
		h.mu.Unlock()
		select {
		case h.changed <- struct{}{}:
		default:
		}
	}
	f, err := NewFailover(client, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	h.f = f
	return h
}

// waitState waits until Degraded() is want, woken by state changes,
// failing past the deadline. It returns how long it waited.
func (h *failoverHarness) waitState(t *testing.T, want bool, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	timer := time.NewTimer(within)
	defer timer.Stop()
	for h.f.Degraded() != want {
		select {
		case <-h.changed:
		case <-timer.C:
			t.Fatalf("Degraded() not %v within %s", want, within)
		}
	}
	return time.Since(start)
}

// changes counts the state changes to degraded and back.
func (h *failoverHarness) changes() (down, up int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, d := range h.history {
		if d {
			down++
		} else {
			up++
		}
	}
	return down, up
}

// deadRedis is a client of a port nobody listens on.
func deadRedis(t *testing.T) goredis.UniversalClient {
	t.Helper()
	c, err := NewClient(ClientOptions{URL: "redis://127.0.0.1:" + strconv.Itoa(freePort(t)), Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestGCRAFailover runs the GCRA table through the failover limiter, both
// healthy (Redis decides) and degraded with one replica (the local fallback
// decides): the answers are the same.
func TestGCRAFailover(t *testing.T) {
	t.Run("healthy", func(t *testing.T) {
		client, prefix := sharedRedis(t)
		n := 0
		limitertest.RunGCRA(t, 2*time.Microsecond, func(t *testing.T, now func() time.Time) limits.Limiter {
			n++
			h := newFailoverHarness(t, client, FailoverOptions{KeyPrefix: prefix + strconv.Itoa(n) + ":"})
			h.f.redis.now = now
			return h.f
		})
	})
	t.Run("degraded", func(t *testing.T) {
		client := deadRedis(t)
		limitertest.RunGCRA(t, time.Microsecond, func(t *testing.T, now func() time.Time) limits.Limiter {
			h := newFailoverHarness(t, client, FailoverOptions{ReplicasHint: 1})
			h.f.local = limits.NewLocalLimiter(limits.LocalOptions{Now: now})
			return h.f
		})
	})
}

func TestFailoverLocalShare(t *testing.T) {
	f := &Failover{replicas: 3}
	tests := []struct {
		in   limits.Limit
		cost int64
		want limits.Limit
	}{
		{limits.Limit{Rate: 600, Per: time.Minute, Burst: 100}, 1, limits.Limit{Rate: 600, Per: 3 * time.Minute, Burst: 33}},
		{limits.Limit{Rate: 60, Per: time.Minute, Burst: 2}, 1, limits.Limit{Rate: 60, Per: 3 * time.Minute, Burst: 1}},
		// Fits the fleet's burst, not this replica's share: passes only on
		// a full local bucket rather than never.
		{limits.Limit{Rate: 100, Per: time.Hour, Burst: 90}, 50, limits.Limit{Rate: 100, Per: 3 * time.Hour, Burst: 50}},
	}
	for _, tc := range tests {
		if got := f.localLimit(tc.in, tc.cost); got != tc.want {
			t.Errorf("localLimit(%+v, %d) = %+v, want %+v", tc.in, tc.cost, got, tc.want)
		}
	}
}

// TestFailoverFleetLimit: two replicas sharing Redis admit one burst between
// them.
func TestFailoverFleetLimit(t *testing.T) {
	client, prefix := sharedRedis(t)
	a := newFailoverHarness(t, client, FailoverOptions{KeyPrefix: prefix, ReplicasHint: 2})
	b := newFailoverHarness(t, client, FailoverOptions{KeyPrefix: prefix, ReplicasHint: 2})
	l := limits.Limit{Rate: 1, Per: time.Hour, Burst: 6}
	allowed := 0
	for i := 0; i < 10; i++ {
		for _, h := range []*failoverHarness{a, b} {
			d, err := h.f.Allow(context.Background(), "hot", l, 1)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed {
				allowed++
			}
		}
	}
	if allowed != 6 {
		t.Fatalf("two replicas admitted %d, want the shared burst of 6", allowed)
	}
	if a.f.Degraded() || b.f.Degraded() {
		t.Fatal("degraded against a healthy Redis")
	}
	if got := metricValue(t, a.f.m.decisions[backendRedis][1]) + metricValue(t, b.f.m.decisions[backendRedis][1]); got != 6 {
		t.Errorf("allowed redis decisions counted = %v, want 6", got)
	}
}

// TestFailoverCallerCancelIsNotAnOutage: a client that went away says
// nothing about Redis.
func TestFailoverCallerCancelIsNotAnOutage(t *testing.T) {
	client, prefix := sharedRedis(t)
	h := newFailoverHarness(t, client, FailoverOptions{KeyPrefix: prefix})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.f.Allow(ctx, "k", limits.Limit{Rate: 1, Per: time.Second, Burst: 1}, 1); err != nil {
		t.Fatal(err)
	}
	if h.f.Degraded() {
		t.Fatal("a cancelled caller switched the limiter to local limits")
	}
}

// TestFailoverRedisKilled kills Redis with SIGKILL under load: no call
// fails or waits past the client timeout, the local fallback takes over
// (sized to the replica share), one line is logged per state change, and
// shared limits come back by themselves within 2 s of a restart on the same
// port (the single server's counterpart of a promotion).
func TestFailoverRedisKilled(t *testing.T) {
	srv := startRedisServer(t)
	const (
		timeout = 200 * time.Millisecond
		// margin covers scheduling on a loaded 2-core machine under -race.
		margin = 500 * time.Millisecond
	)
	client, err := NewClient(ClientOptions{URL: srv.URL(), Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	h := newFailoverHarness(t, client, FailoverOptions{ReplicasHint: 2, Timeout: timeout, ProbeInterval: 50 * time.Millisecond})
	ctx := context.Background()
	lookups := limits.Limit{Rate: 1000, Per: time.Second, Burst: 1000}

	// sharedEventually asserts that, within 5 s, a decision lands in Redis.
	sharedEventually := func(key string) time.Duration {
		t.Helper()
		start := time.Now()
		for {
			d, err := h.f.Allow(ctx, key, lookups, 1)
			if err != nil || !d.Allowed {
				t.Fatalf("Allow = %+v, %v", d, err)
			}
			if client.Exists(ctx, DefaultKeyPrefix+"rl:"+key).Val() == 1 {
				return time.Since(start)
			}
			if time.Since(start) > 5*time.Second {
				for _, e := range h.logs.All() {
					t.Logf("log: %s %s %v", e.Level, e.Message, e.ContextMap())
				}
				t.Fatalf("no decision stored in Redis within 5 s (degraded=%v)", h.f.Degraded())
			}
			h.waitState(t, false, 5*time.Second)
		}
	}
	sharedEventually("warm")

	// Lookup load through the whole outage.
	var (
		stop     = make(chan struct{})
		wg       sync.WaitGroup
		calls    atomic.Int64
		failures atomic.Int64
		slowest  atomic.Int64
	)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				_, err := h.f.Allow(ctx, "load", lookups, 1)
				el := int64(time.Since(start))
				for {
					s := slowest.Load()
					if el <= s || slowest.CompareAndSwap(s, el) {
						break
					}
				}
				calls.Add(1)
				if err != nil {
					failures.Add(1)
				}
			}
		}()
	}

	killed := time.Now()
	srv.kill()
	h.waitState(t, true, 5*time.Second)
	took := time.Since(killed)
	if took > timeout+margin {
		t.Errorf("fallback engaged %s after the kill, client timeout %s", took, timeout)
	}
	t.Logf("fallback engaged %s after the kill", took)

	// The local share: burst 4 across 2 replicas is 2 here.
	small := limits.Limit{Rate: 1, Per: time.Hour, Burst: 4}
	var got []bool
	for i := 0; i < 3; i++ {
		d, err := h.f.Allow(ctx, "fresh", small, 1)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, d.Allowed)
	}
	if !got[0] || !got[1] || got[2] {
		t.Errorf("degraded decisions for burst 4 over 2 replicas = %v, want 2 allowed then denied", got)
	}
	// In-flight leases fall back too: max 4 over 2 replicas is 2.
	inflight := h.f.InFlight()
	var oks []bool
	for i := 0; i < 3; i++ {
		_, ok, err := inflight.Acquire(ctx, "uploader", 4, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		oks = append(oks, ok)
	}
	if !oks[0] || !oks[1] || oks[2] {
		t.Errorf("degraded leases = %v, want 2 granted then refused", oks)
	}

	srv.restart()
	back := sharedEventually("after")
	t.Logf("shared limits back %s after the restart was ready", back)
	if back > 2*time.Second {
		t.Errorf("shared limits back %s after the restart was ready, want within 2 s", back)
	}

	close(stop)
	wg.Wait()
	if f := failures.Load(); f != 0 {
		t.Errorf("%d of %d calls under load returned an error", f, calls.Load())
	}
	if s := time.Duration(slowest.Load()); s > timeout+margin {
		t.Errorf("slowest call under load took %s, client timeout %s", s, timeout)
	}
	t.Logf("%d calls under load, slowest %s", calls.Load(), time.Duration(slowest.Load()))

	// One line per state change, however many calls failed.
	down, up := h.changes()
	warn := h.logs.FilterLevelExact(zapcore.WarnLevel).Len()
	info := h.logs.FilterLevelExact(zapcore.InfoLevel).Len()
	if down < 1 || up < 1 || warn != down || info != up {
		t.Errorf("logged %d warnings and %d infos for %d changes down and %d up", warn, info, down, up)
	}
	errs := metricValue(t, h.f.m.redisErrors)
	if errs < 1 {
		t.Errorf("redis errors = %v, want at least 1", errs)
	}
	t.Logf("%d state changes down, %d up, %v failed Redis calls", down, up, errs)
	if v := metricValue(t, h.f.m.fallbacks); v != float64(down) {
		t.Errorf("fallbacks = %v, want %d", v, down)
	}
	if v := metricValue(t, h.f.m.decisions[backendLocal][1]); v < 2 {
		t.Errorf("local allowed decisions = %v, want at least 2", v)
	}
	families, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	registered := map[string]bool{}
	for _, mf := range families {
		registered[mf.GetName()] = true
	}
	for _, name := range []string{
		"gateway_ratelimit_decisions_total", "gateway_ratelimit_fallbacks_total",
		"gateway_ratelimit_degraded", "gateway_ratelimit_redis_errors_total", "gateway_upload_leases_total",
	} {
		if !registered[name] {
			t.Errorf("metric %s not registered", name)
		}
	}
}

func TestFailoverDegradedGauge(t *testing.T) {
	h := newFailoverHarness(t, deadRedis(t), FailoverOptions{})
	if v := metricValue(t, h.f.m.degraded); v != 0 {
		t.Fatalf("gauge = %v before any failure", v)
	}
	if _, err := h.f.Allow(context.Background(), "k", limits.Limit{Rate: 1, Per: time.Second, Burst: 1}, 1); err != nil {
		t.Fatal(err)
	}
	h.waitState(t, true, time.Second)
	if v := metricValue(t, h.f.m.degraded); v != 1 {
		t.Fatalf("gauge = %v while degraded, want 1", v)
	}
}

// metricValue reads a counter or gauge.
func metricValue(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var pb dto.Metric
	if err := m.Write(&pb); err != nil {
		t.Fatal(err)
	}
	switch {
	case pb.Counter != nil:
		return pb.Counter.GetValue()
	case pb.Gauge != nil:
		return pb.Gauge.GetValue()
	}
	t.Fatalf("%s is neither a counter nor a gauge", m.Desc())
	return 0
}

// TestFailoverSlowRedis: a Redis that answers after 2 s costs a request the
// configured timeout once, then nothing while degraded.
func TestFailoverSlowRedis(t *testing.T) {
	srv := startRedisServer(t)
	proxy := startSlowProxy(t, srv.Addr(), 2*time.Second)
	const timeout = 150 * time.Millisecond
	client, err := NewClient(ClientOptions{URL: "redis://" + proxy.Addr(), Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	// The limiter's own timeout binds even when the client's is looser.
	h := newFailoverHarness(t, client, FailoverOptions{Timeout: timeout})
	l := limits.Limit{Rate: 10, Per: time.Second, Burst: 10}

	start := time.Now()
	d, err := h.f.Allow(context.Background(), "k", l, 1)
	first := time.Since(start)
	if err != nil || !d.Allowed {
		t.Fatalf("Allow = %+v, %v", d, err)
	}
	if first > timeout+250*time.Millisecond {
		t.Errorf("first call took %s, timeout %s", first, timeout)
	}
	if !h.f.Degraded() {
		t.Fatal("not degraded after a timeout")
	}

	start = time.Now()
	ds, err := h.f.AllowAll(context.Background(), []limits.Check{{Key: "k", Limit: l, Cost: 1}, {Key: "ws", Limit: l, Cost: 1}})
	if err != nil || !limits.Allowed(ds) {
		t.Fatalf("AllowAll = %+v, %v", ds, err)
	}
	_, ok, err := h.f.InFlight().Acquire(context.Background(), "k", 1, time.Minute)
	if err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if el := time.Since(start); el >= timeout {
		t.Errorf("degraded calls took %s: Redis is still waited on", el)
	}
	t.Logf("first call %s, degraded calls %s", first, time.Since(start))
}

func TestFailoverErrorsAreTheCallers(t *testing.T) {
	h := newFailoverHarness(t, deadRedis(t), FailoverOptions{})
	ctx := context.Background()
	if _, err := h.f.Allow(ctx, "k", limits.Limit{}, 1); !errors.Is(err, limits.ErrInvalidLimit) {
		t.Errorf("invalid limit: err = %v", err)
	}
	if _, err := h.f.Allow(ctx, "k", limits.Limit{Rate: 1, Per: time.Second, Burst: 2}, 3); !errors.Is(err, limits.ErrExceedsBurst) {
		t.Errorf("cost over burst: err = %v", err)
	}
	if h.f.Degraded() {
		t.Error("caller errors reached Redis")
	}
	if _, _, err := h.f.InFlight().Acquire(ctx, "k", 0, time.Second); !errors.Is(err, limits.ErrInvalidLimit) {
		t.Errorf("invalid max: err = %v", err)
	}
}

func TestFailoverMetricsRegisterOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	client := deadRedis(t)
	f, err := NewFailover(client, FailoverOptions{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := NewFailover(client, FailoverOptions{Registerer: reg}); err == nil {
		t.Error("a second limiter registered the same metrics without error")
	}
}
