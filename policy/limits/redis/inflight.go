package redis

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/aigateway/gateway/policy/limits"
	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"
)

// DefaultInFlightKeyPrefix starts every in-flight key in Redis when the
// caller gives no prefix.
const DefaultInFlightKeyPrefix = "gw:if:"

// Lease scripts. A key is a sorted set of lease ids scored by their expiry
// in milliseconds of the Redis clock (TIME, so replicas' clocks do not
// matter); ARGV's last element optionally replaces the clock (tests only).
// The set expires with its latest lease, so an abandoned key costs nothing.
//
// acquireScript: ARGV id, max, ttl_ms, [now_ms]. Drops expired leases,
// then adds id if fewer than max remain. Returns 1 when added, 0 when full.
var acquireScript = newScript(`
if redis.replicate_commands then redis.replicate_commands() end
local now
if ARGV[4] ~= nil and ARGV[4] ~= '' then
  now = tonumber(ARGV[4])
else
  local tm = redis.call('TIME')
  now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIRE', KEYS[1], math.max(1, math.ceil(tonumber(last[2]) - now)))
return 1
`)

// renewScript: ARGV id, ttl_ms, [now_ms]. Extends a live lease to now+ttl.
// Returns 1, or 0 when the lease is gone (expired or released): a lost
// lease is not re-added, since its slot may have been given away.
var renewScript = newScript(`
if redis.replicate_commands then redis.replicate_commands() end
local now
if ARGV[3] ~= nil and ARGV[3] ~= '' then
  now = tonumber(ARGV[3])
else
  local tm = redis.call('TIME')
  now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
end
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) <= now then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIRE', KEYS[1], math.max(1, math.ceil(tonumber(last[2]) - now)))
return 1
`)

// InFlight shares in-flight leases between replicas through Redis: one
// sorted set per key, changed only by atomic scripts, so max holds across
// the fleet. One renewer per InFlight extends every lease it holds in a
// single pipelined round trip every ttl/3, until each is released; if the
// holder dies, its leases expire after ttl.
//
// It is safe for concurrent use. Redis failures are returned wrapped in
// limits.ErrLimiterUnavailable; Failover.InFlight fails open instead.
type InFlight struct {
	client goredis.UniversalClient
	prefix string
	// releaseTimeout bounds the ZREM of a release, which runs after the
	// request's context may be gone.
	releaseTimeout time.Duration
	now            func() time.Time // tests only: replaces Redis TIME

	mu       sync.Mutex
	held     map[*lease]struct{}
	renewing bool // the renewer runs while leases are held
}

var _ limits.InFlight = (*InFlight)(nil)

// NewInFlight returns leases stored under prefix
// (DefaultInFlightKeyPrefix when empty).
func NewInFlight(client goredis.UniversalClient, prefix string) *InFlight {
	if prefix == "" {
		prefix = DefaultInFlightKeyPrefix
	}
	return &InFlight{client: client, prefix: prefix, releaseTimeout: time.Second, held: make(map[*lease]struct{})}
}

// Acquire implements InFlight with one round trip. The returned release
// removes the lease with one more round trip (bounded by the client's
// timeouts); if that fails, the lease expires after ttl.
func (r *InFlight) Acquire(ctx context.Context, key string, max int, ttl time.Duration) (func(), bool, error) {
	if err := limits.ValidateInFlight(max, ttl); err != nil {
		return noRelease, false, err
	}
	id := uuid.NewString()
	rkey := r.prefix + key
	ttlMS := max64(1, ttl.Milliseconds())
	n, err := acquireScript.run(ctx, r.client, []string{rkey}, id, max, ttlMS, r.nowArg()).Int()
	if err != nil {
		return noRelease, false, unavailable(err)
	}
	if n != 1 {
		return noRelease, false, nil
	}
	l := &lease{r: r, key: rkey, id: id, ttlMS: ttlMS}
	r.hold(l)
	return l.release, true, nil
}

func (r *InFlight) nowArg() string {
	if r.now == nil {
		return ""
	}
	return strconv.FormatInt(r.now().UnixMilli(), 10)
}

// hold adds l to the leases renewed, starting the renewer if it is idle.
func (r *InFlight) hold(l *lease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held[l] = struct{}{}
	if !r.renewing {
		r.renewing = true
		go r.renew()
	}
}

// drop stops renewing l.
func (r *InFlight) drop(l *lease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.held, l)
}

// due returns the leases held and the interval to the next renewal (a
// third of the shortest ttl among them); ok is false, and the renewer
// stops, when none are held.
func (r *InFlight) due() (leases []*lease, every time.Duration, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.held) == 0 {
		r.renewing = false
		return nil, 0, false
	}
	every = time.Duration(1<<63 - 1)
	for l := range r.held {
		leases = append(leases, l)
		every = min(every, time.Duration(l.ttlMS)*time.Millisecond/3)
	}
	return leases, max(every, time.Millisecond), true
}

// renew extends every held lease, all in one pipelined round trip per
// interval, until none is held. A lease found gone (expired, or removed)
// is no longer renewed: its slot may have been given away. Failed rounds
// are retried at the next interval: Redis may be back before the leases
// expire.
func (r *InFlight) renew() {
	_, every, ok := r.due()
	for ok {
		time.Sleep(every) // the renewal period itself, not synchronisation
		var leases []*lease
		if leases, every, ok = r.due(); !ok {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), min(every, r.releaseTimeout))
		pipe := r.client.Pipeline()
		cmds := make([]*goredis.Cmd, len(leases))
		for i, l := range leases {
			cmds[i] = renewScript.eval(ctx, pipe, []string{l.key}, l.id, l.ttlMS, r.nowArg())
		}
		_, err := pipe.Exec(ctx)
		cancel()
		if errors.Is(err, goredis.ErrClosed) {
			return // the client is closed; the leases expire by themselves
		}
		for i, l := range leases {
			if n, err := cmds[i].Int(); err == nil && n == 0 {
				r.drop(l)
			}
		}
	}
}

// lease is one held slot.
type lease struct {
	r     *InFlight
	key   string
	id    string
	ttlMS int64
	once  sync.Once
}

func (l *lease) release() {
	l.once.Do(func() {
		l.r.drop(l)
		ctx, cancel := context.WithTimeout(context.Background(), l.r.releaseTimeout)
		defer cancel()
		// A failed removal leaves the lease to expire after its ttl. A
		// renewal already in flight may land first; it cannot re-add the
		// lease (renewScript only extends one that exists).
		_ = l.r.client.ZRem(ctx, l.key, l.id).Err()
	})
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// noRelease is the release of a lease not granted (InFlight's contract:
// release is never nil).
func noRelease() {}
