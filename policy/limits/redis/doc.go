// Package redis holds the limiters that share their state between
// replicas through Redis: the GCRA Limiter (one Lua script per decision),
// in-flight leases (InFlight), the Failover limiter that answers from local
// per-replica shares while Redis is unavailable, and the Redis client
// constructor tuned for them (NewClient).
//
// It is the only package that speaks to Redis. Only the wiring imports it;
// everything else depends on limits.Limiter and limits.InFlight, and
// limits.CachedLimiter (which only needs a limits.Limiter) goes in front of
// a Failover to spare busy keys a round trip per request.
package redis
