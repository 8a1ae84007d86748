package redis

import (
	"context"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aigateway/gateway/policy/limits"
	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// Defaults of FailoverOptions.
const (
	DefaultKeyPrefix     = "gw:"
	DefaultProbeInterval = 500 * time.Millisecond
)

// FailoverOptions configures a Failover.
type FailoverOptions struct {
	// Logger receives one line per state change (nil: no logging).
	Logger *zap.Logger
	// Registerer receives the metrics (nil: not registered). Register one
	// Failover per registry: the metric names are fixed.
	Registerer prometheus.Registerer
	// ReplicasHint is how many replicas share the limits. While Redis is
	// unavailable each replica allows 1/ReplicasHint of every limit (rate,
	// burst and in-flight max, each at least 1), so the fleet as a whole
	// stays near the shared limit. Values below 1 mean 1.
	ReplicasHint int
	// KeyPrefix starts every key this limiter writes: rate buckets under
	// KeyPrefix+"rl:", leases under KeyPrefix+"if:". Default
	// DefaultKeyPrefix.
	KeyPrefix string
	// Timeout bounds each Redis call, whatever the caller's context says
	// (default DefaultTimeout). Past it the call is answered locally.
	Timeout time.Duration
	// ProbeInterval is how often a degraded limiter checks whether Redis is
	// back (default DefaultProbeInterval).
	ProbeInterval time.Duration
	// LocalMaxKeys bounds the local fallback's memory (default
	// DefaultLocalMaxKeys).
	LocalMaxKeys int
	// OnStateChange, when set, is called after every change of state with
	// the new value of Degraded, in order, from the goroutine that caused
	// the change. It must return quickly and must not call back into the
	// limiter other than Degraded.
	OnStateChange func(degraded bool)
}

// Failover is the fleet-wide limiter for a replicated deployment:
// decisions come from Redis while it answers, and from a local in-process
// GCRA sized to limit/ReplicasHint while it does not. It never turns Redis
// trouble into an error: unreachable, slow (past Timeout) or failing Redis
// all fail open to the local limits.
//
// The first failure switches the whole limiter to local decisions (logged
// once, counted, visible through Degraded for /readyz), so a dead Redis is
// not waited on by every request; a background probe (one script run every
// ProbeInterval) switches it back as soon as Redis answers again. State
// kept locally during an outage is not copied to Redis and the other way
// round: each side resumes from what it last knew.
//
// It is safe for concurrent use. Close stops the probe; the Redis client
// belongs to the caller.
type Failover struct {
	redis    *Limiter
	leases   *InFlight
	local    *limits.LocalLimiter
	localIF  *limits.LocalInFlight
	log      *zap.Logger
	replicas int
	timeout  time.Duration
	probeInt time.Duration
	onChange func(bool)
	m        failoverMetrics
	// reloadTopology asks a Cluster client to read its slot map again
	// (nil for a single server or Sentinel). go-redis reloads it on MOVED
	// or ASK, and otherwise lazily: a master that died answers neither,
	// so without a reload its slots are dialled at the dead address until
	// the map is read again, long after a replica took them over.
	reloadTopology func()

	degraded atomic.Bool
	mu       sync.Mutex // serialises state changes and Close
	probeAt  string     // the Redis key of the call that failed last (under mu)
	closed   bool
	stop     chan struct{}
	wg       sync.WaitGroup
}

var _ limits.BatchLimiter = (*Failover)(nil)

// NewFailover returns a Failover on client. It fails only
// when the metrics cannot be registered.
func NewFailover(client goredis.UniversalClient, opts FailoverOptions) (*Failover, error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.ReplicasHint < 1 {
		opts.ReplicasHint = 1
	}
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = DefaultKeyPrefix
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.ProbeInterval <= 0 {
		opts.ProbeInterval = DefaultProbeInterval
	}
	m, err := newFailoverMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	var reload func()
	if cc, ok := client.(*goredis.ClusterClient); ok {
		reload = func() { cc.ReloadState(context.Background()) }
	}
	return &Failover{
		reloadTopology: reload,
		redis:          NewLimiter(client, opts.KeyPrefix+"rl:"),
		leases:         NewInFlight(client, opts.KeyPrefix+"if:"),
		local:          limits.NewLocalLimiter(limits.LocalOptions{MaxKeys: opts.LocalMaxKeys}),
		localIF:        limits.NewLocalInFlight(),
		log:            opts.Logger,
		replicas:       opts.ReplicasHint,
		timeout:        opts.Timeout,
		probeInt:       opts.ProbeInterval,
		onChange:       opts.OnStateChange,
		m:              m,
		stop:           make(chan struct{}),
	}, nil
}

// Degraded reports whether decisions are currently local because Redis is
// unavailable. Report it in /readyz detail; it should not fail readiness,
// since the replica still serves.
func (f *Failover) Degraded() bool { return f.degraded.Load() }

// Close stops the background probe and waits for it. Decisions keep
// working after Close (a Redis failure then stays degraded).
func (f *Failover) Close() error {
	f.mu.Lock()
	if !f.closed {
		f.closed = true
		close(f.stop)
	}
	f.mu.Unlock()
	f.wg.Wait()
	return nil
}

// Allow implements Limiter. Errors are only ErrInvalidLimit and
// *ExceedsBurstError (checked against the shared limit, before any I/O).
func (f *Failover) Allow(ctx context.Context, key string, l limits.Limit, cost int64) (limits.Decision, error) {
	if err := l.ValidateCost(cost); err != nil {
		return l.Denial(), err
	}
	if !f.degraded.Load() {
		rctx, cancel := context.WithTimeout(ctx, f.timeout)
		d, err := f.redis.Allow(rctx, key, l, cost)
		cancel()
		if err == nil {
			f.m.count(backendRedis, d)
			return d, nil
		}
		f.failed(ctx, err, f.redis.prefix+key)
	}
	d, err := f.local.Allow(ctx, key, f.localLimit(l, cost), cost)
	if err == nil {
		f.m.count(backendLocal, d)
	}
	return d, err
}

// AllowAll implements BatchLimiter, in one Redis round trip while Redis is
// healthy (see Limiter.AllowAll for the refund on denial).
func (f *Failover) AllowAll(ctx context.Context, checks []limits.Check) ([]limits.Decision, error) {
	if err := limits.ValidateChecks(checks); err != nil {
		return limits.Denials(checks), err
	}
	if !f.degraded.Load() {
		rctx, cancel := context.WithTimeout(ctx, f.timeout)
		ds, err := f.redis.AllowAll(rctx, checks)
		cancel()
		if err == nil {
			for _, d := range ds {
				f.m.count(backendRedis, d)
			}
			return ds, nil
		}
		f.failed(ctx, err, f.redis.prefix+checks[0].Key)
	}
	local := make([]limits.Check, len(checks))
	for i, c := range checks {
		local[i] = limits.Check{Key: c.Key, Limit: f.localLimit(c.Limit, c.Cost), Cost: c.Cost}
	}
	ds, err := f.local.AllowAll(ctx, local)
	if err == nil {
		for _, d := range ds {
			f.m.count(backendLocal, d)
		}
	}
	return ds, err
}

// InFlight returns in-flight leases that share this limiter's Redis state
// machine: Redis leases while healthy, local counts of max/ReplicasHint (at
// least 1) while degraded. Its Acquire never returns Redis errors.
func (f *Failover) InFlight() limits.InFlight { return failoverInFlight{f} }

type failoverInFlight struct{ f *Failover }

func (i failoverInFlight) Acquire(ctx context.Context, key string, max int, ttl time.Duration) (func(), bool, error) {
	f := i.f
	if err := limits.ValidateInFlight(max, ttl); err != nil {
		return noRelease, false, err
	}
	if !f.degraded.Load() {
		rctx, cancel := context.WithTimeout(ctx, f.timeout)
		release, ok, err := f.leases.Acquire(rctx, key, max, ttl)
		cancel()
		if err == nil {
			f.m.countLease(backendRedis, ok)
			return release, ok, nil
		}
		f.failed(ctx, err, f.leases.prefix+key)
	}
	share := max / f.replicas
	if share < 1 {
		share = 1
	}
	release, ok, err := f.localIF.Acquire(ctx, key, share, ttl)
	if err == nil {
		f.m.countLease(backendLocal, ok)
	}
	return release, ok, err
}

// localLimit scales l to this replica's share: the emission interval is
// multiplied by the replica count (exact, unlike dividing an integer rate)
// and the burst divided, at least 1. A cost that fits the shared burst but
// not the local share gets a burst of exactly its cost: it passes when the
// local bucket is full rather than never.
func (f *Failover) localLimit(l limits.Limit, cost int64) limits.Limit {
	n := int64(f.replicas)
	per := l.Per
	if int64(per) > math.MaxInt64/n {
		per = math.MaxInt64
	} else {
		per *= time.Duration(n)
	}
	burst := l.Capacity() / n
	if burst < 1 {
		burst = 1
	}
	if cost > burst {
		burst = cost
	}
	return limits.Limit{Rate: l.Rate, Per: per, Burst: int(burst)}
}

// failed records a Redis failure of the call on the Redis key failedKey
// and switches to local decisions. A caller that gave up (its context
// ended) says nothing about Redis.
//
// The probe then asks where the call failed: in a Cluster, one shard may
// be down while the others serve, and a probe on a fixed key (whose slot
// may sit on a healthy shard) would switch back at once, only for the next
// call on the dead shard to fail again: the limiter flipped between Redis
// and local limits every probe, each key moving between its shared bucket
// and a fresh local one. Probing failedKey's own slot keeps it local until
// that shard answers.
func (f *Failover) failed(ctx context.Context, err error, failedKey string) {
	if ctx.Err() != nil {
		return
	}
	f.m.redisErrors.Inc()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.degraded.Load() {
		return
	}
	f.degraded.Store(true)
	f.probeAt = failedKey
	if f.reloadTopology != nil {
		f.reloadTopology()
	}
	f.m.fallbacks.Inc()
	f.m.degraded.Set(1)
	f.log.Warn("redis unavailable: rate limits and upload leases fall back to local per-replica limits",
		zap.Error(err), zap.Int("replicas_hint", f.replicas))
	if f.onChange != nil {
		f.onChange(true)
	}
	if !f.closed {
		f.wg.Add(1)
		go f.probe()
	}
}

// probeKey and probeLimit exercise the same script and write path as real
// decisions, so a server that answers PING but refuses scripts or writes
// (read-only replica, out of memory) stays degraded.
const probeKey = "_probe"

// probeKeyAt is a probe key in the Cluster slot of the Redis key at: its
// hash tag is what decides at's slot (at's own tag, else at itself), so
// the probe goes where the failed call went without touching the call's
// own bucket. (A key with a "}" outside a tag would need its slot
// computed; limit keys have none.)
func probeKeyAt(at string) string {
	if at == "" {
		return probeKey
	}
	if i := strings.IndexByte(at, '{'); i >= 0 {
		if j := strings.IndexByte(at[i+1:], '}'); j > 0 {
			at = at[i+1 : i+1+j]
		}
	}
	return probeKey + "{" + at + "}"
}

var probeLimit = limits.Limit{Rate: 1 << 30, Per: time.Second, Burst: 1 << 30}

func (f *Failover) probe() {
	defer f.wg.Done()
	f.mu.Lock()
	key := probeKeyAt(f.probeAt)
	f.mu.Unlock()
	t := time.NewTicker(f.probeInt)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
		}
		// A failover moves slots without telling anyone: read the map
		// again on every probe (go-redis runs one reload at a time).
		if f.reloadTopology != nil {
			f.reloadTopology()
		}
		ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
		_, err := f.redis.Allow(ctx, key, probeLimit, 1)
		cancel()
		if err == nil {
			f.recovered()
			return
		}
	}
}

func (f *Failover) recovered() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.degraded.Store(false)
	f.m.degraded.Set(0)
	f.log.Info("redis reachable again: shared rate limits and upload leases restored")
	if f.onChange != nil {
		f.onChange(false)
	}
}

const (
	backendRedis = iota
	backendLocal
)

// failoverMetrics are resolved once so the hot path does no label lookups.
type failoverMetrics struct {
	decisions   [2][2]prometheus.Counter // [backend][allowed]
	leases      [2][2]prometheus.Counter // [backend][acquired]
	redisErrors prometheus.Counter
	fallbacks   prometheus.Counter
	degraded    prometheus.Gauge
}

func newFailoverMetrics(reg prometheus.Registerer) (failoverMetrics, error) {
	decisions := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_ratelimit_decisions_total",
		Help: "Rate-limit decisions by backend (redis, local) and result (allowed, denied).",
	}, []string{"backend", "result"})
	leases := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_upload_leases_total",
		Help: "In-flight upload lease requests by backend (redis, local) and result (acquired, full).",
	}, []string{"backend", "result"})
	m := failoverMetrics{
		redisErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_ratelimit_redis_errors_total",
			Help: "Redis calls of the limiter that failed or timed out and were answered locally.",
		}),
		fallbacks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_ratelimit_fallbacks_total",
			Help: "Switches from Redis to local per-replica limits.",
		}),
		degraded: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gateway_ratelimit_degraded",
			Help: "1 while limits are decided locally because Redis is unavailable, else 0.",
		}),
	}
	backends := [2]string{"redis", "local"}
	for b, name := range backends {
		m.decisions[b][0] = decisions.WithLabelValues(name, "denied")
		m.decisions[b][1] = decisions.WithLabelValues(name, "allowed")
		m.leases[b][0] = leases.WithLabelValues(name, "full")
		m.leases[b][1] = leases.WithLabelValues(name, "acquired")
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{decisions, leases, m.redisErrors, m.fallbacks, m.degraded} {
			if err := reg.Register(c); err != nil {
				return m, err
			}
		}
	}
	return m, nil
}

func (m *failoverMetrics) count(backend int, d limits.Decision) {
	m.decisions[backend][b2i(d.Allowed)].Inc()
}

func (m *failoverMetrics) countLease(backend int, ok bool) {
	m.leases[backend][b2i(ok)].Inc()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
