package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aigateway/gateway/policy/limits"
	goredis "github.com/redis/go-redis/v9"
)

// DefaultRateKeyPrefix starts every rate-limit key in Redis when the caller
// gives no prefix.
const DefaultRateKeyPrefix = "gw:rl:"

// redisEpoch is the origin of the times the GCRA script stores, in
// microseconds: close to now, so a float64 keeps sub-microsecond precision
// for centuries (16 significant digits are reached around 2300).
var redisEpoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// gcraScript is limits.gcraStep (policy/limits/gcra.go) in Lua, in microseconds since redisEpoch,
// with the clock read from Redis TIME so every replica agrees on it.
//
//	KEYS[1]  the bucket's key; it holds the theoretical arrival time (TAT)
//	ARGV[1]  emission interval in microseconds (float)
//	ARGV[2]  capacity (burst, at least 1)
//	ARGV[3]  cost (integer; negative refunds, 0 reads)
//	ARGV[4]  optional: now in microseconds since the epoch (tests only)
//
// Returns {allowed 0|1, remaining, retry_after_us (-1 when allowed),
// reset_after_us}. The key expires when the bucket is full again, which is
// when its state would be the same as no key: an idle key costs nothing.
// The TAT is written with %.17g because Lua's tostring keeps only 14 digits
// (10 µs at these magnitudes, 60 bytes of a byte budget). Results are
// clamped below 2^53 so the conversion to Redis integers stays exact.
var gcraScript = newScript(`
if redis.replicate_commands then redis.replicate_commands() end
local t = tonumber(ARGV[1])
local cap = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local now
if ARGV[4] ~= nil and ARGV[4] ~= '' then
  now = tonumber(ARGV[4])
else
  local tm = redis.call('TIME')
  now = (tonumber(tm[1]) - 1704067200) * 1000000 + tonumber(tm[2])
end
local slack = math.min(1, t / 2)
local big = 9007199254740991
local tau = t * cap
local tat = redis.call('GET', KEYS[1])
if tat then tat = tonumber(tat) else tat = now end
if tat < now then tat = now end
local new_tat = tat + cost * t
if new_tat < now then new_tat = now end
local allowed = 1
local retry = -1
if cost > 0 and new_tat - now > tau + slack then
  allowed = 0
  retry = math.min(math.ceil(new_tat - tau - now), big)
  new_tat = tat
end
local level = new_tat - now
if allowed == 1 and cost ~= 0 then
  if level > 0 then
    local ttl = math.min(math.ceil(level / 1000), big)
    redis.call('SET', KEYS[1], string.format('%.17g', new_tat), 'PX', ttl)
  else
    redis.call('DEL', KEYS[1])
  end
end
local remaining = math.floor((tau - level + slack) / t)
if remaining < 0 then remaining = 0 end
if remaining > cap then remaining = cap end
if remaining > big then remaining = big end
return {allowed, remaining, retry, math.min(math.ceil(level), big)}
`)

// Limiter is a GCRA limiter shared by every replica through Redis.
// Each decision touches exactly one key (no CROSSSLOT in a cluster) and runs
// as one atomic script using the server's clock.
//
// It is safe for concurrent use. Every Redis failure is returned wrapped in
// limits.ErrLimiterUnavailable; wrap it in a Failover to fail open instead.
// No script is ever sent twice (see script): a retry of a script that
// ran but whose reply was lost would charge twice.
type Limiter struct {
	client goredis.UniversalClient
	prefix string
	// now, when set, replaces Redis TIME (tests only: it makes the
	// expected values exact).
	now func() time.Time
}

var _ limits.BatchLimiter = (*Limiter)(nil)

// NewLimiter returns a limiter storing its buckets under prefix
// (DefaultRateKeyPrefix when empty). Give replicas sharing limits the same
// prefix, and unrelated deployments sharing a server different ones.
func NewLimiter(client goredis.UniversalClient, prefix string) *Limiter {
	if prefix == "" {
		prefix = DefaultRateKeyPrefix
	}
	return &Limiter{client: client, prefix: prefix}
}

// Allow implements Limiter with one round trip.
func (r *Limiter) Allow(ctx context.Context, key string, l limits.Limit, cost int64) (limits.Decision, error) {
	if err := l.ValidateCost(cost); err != nil {
		return l.Denial(), err
	}
	res, err := gcraScript.run(ctx, r.client, []string{r.prefix + key}, r.args(l, cost)...).Result()
	if err != nil {
		return l.Denial(), unavailable(err)
	}
	return parseGCRA(res, l)
}

// AllowAll implements BatchLimiter with one pipelined round trip (two when
// Redis has not cached the script yet). The checks are not one atomic
// script, because their keys may live on different cluster nodes: when one
// denies, the others were charged and are refunded in a second round trip.
// Between the two, concurrent requests see those keys charged, erring on
// the side of the limit. If Redis fails midway, charges that landed stay.
func (r *Limiter) AllowAll(ctx context.Context, checks []limits.Check) ([]limits.Decision, error) {
	if err := limits.ValidateChecks(checks); err != nil {
		return limits.Denials(checks), err
	}
	ds := limits.Denials(checks)
	if len(checks) == 0 {
		return ds, nil
	}
	cmds, err := r.pipeline(ctx, checks, func(c limits.Check) int64 { return c.Cost })
	if err != nil {
		return ds, err
	}
	denied := false
	for i, cmd := range cmds {
		d, err := parseGCRA(cmd.Val(), checks[i].Limit)
		if err != nil {
			return ds, err
		}
		ds[i] = d
		denied = denied || !d.Allowed
	}
	if !denied {
		return ds, nil
	}
	refunds := make([]limits.Check, 0, len(checks))
	for i, c := range checks {
		if ds[i].Allowed && c.Cost > 0 {
			refunds = append(refunds, c)
		}
	}
	if len(refunds) > 0 {
		if _, err := r.pipeline(ctx, refunds, func(c limits.Check) int64 { return -c.Cost }); err != nil {
			return ds, err
		}
	}
	return ds, nil
}

// pipeline runs the script once per check in one round trip, then once
// more with EVAL for those that met NOSCRIPT (a fresh or flushed server;
// NOSCRIPT means the script did not run, so nothing is charged twice).
func (r *Limiter) pipeline(ctx context.Context, checks []limits.Check, cost func(limits.Check) int64) ([]*goredis.Cmd, error) {
	cmds := make([]*goredis.Cmd, len(checks))
	pipe := r.client.Pipeline()
	for i, c := range checks {
		cmds[i] = gcraScript.evalSha(ctx, pipe, []string{r.prefix + c.Key}, r.args(c.Limit, cost(c))...)
	}
	_, _ = pipe.Exec(ctx)

	var missing []int
	for i, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			if !goredis.HasErrorPrefix(err, "NOSCRIPT") {
				return nil, unavailable(err)
			}
			missing = append(missing, i)
		}
	}
	if len(missing) == 0 {
		return cmds, nil
	}
	pipe = r.client.Pipeline()
	for _, i := range missing {
		c := checks[i]
		cmds[i] = gcraScript.eval(ctx, pipe, []string{r.prefix + c.Key}, r.args(c.Limit, cost(c))...)
	}
	_, _ = pipe.Exec(ctx)
	for _, i := range missing {
		if err := cmds[i].Err(); err != nil {
			return nil, unavailable(err)
		}
	}
	return cmds, nil
}

func (r *Limiter) args(l limits.Limit, cost int64) []any {
	args := []any{
		strconv.FormatFloat(l.Interval()/1e3, 'g', -1, 64),
		l.Capacity(),
		cost,
		"",
	}
	if r.now != nil {
		args[3] = strconv.FormatFloat(float64(r.now().Sub(redisEpoch))/1e3, 'f', 3, 64)
	}
	return args
}

// parseGCRA decodes the script's reply.
func parseGCRA(res any, l limits.Limit) (limits.Decision, error) {
	d := l.Denial()
	vals, ok := res.([]any)
	if !ok || len(vals) != 4 {
		return d, fmt.Errorf("%w: unexpected script reply %T", limits.ErrLimiterUnavailable, res)
	}
	var n [4]int64
	for i, v := range vals {
		if n[i], ok = v.(int64); !ok {
			return d, fmt.Errorf("%w: unexpected script reply element %T", limits.ErrLimiterUnavailable, v)
		}
	}
	d.Allowed = n[0] == 1
	d.Remaining = int(n[1])
	if !d.Allowed {
		d.RetryAfter = usToDuration(n[2])
	}
	d.ResetAfter = usToDuration(n[3])
	return d, nil
}

func usToDuration(us int64) time.Duration {
	const maxUS = int64(^uint64(0)>>1) / int64(time.Microsecond)
	switch {
	case us <= 0:
		return 0
	case us > maxUS:
		return time.Duration(maxUS) * time.Microsecond
	}
	return time.Duration(us) * time.Microsecond
}

// unavailable wraps a Redis failure. Redis errors carry addresses and
// server messages but never credentials.
func unavailable(err error) error {
	if errors.Is(err, limits.ErrLimiterUnavailable) {
		return err
	}
	return fmt.Errorf("%w: %w", limits.ErrLimiterUnavailable, err)
}
