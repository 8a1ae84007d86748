// Package limits decides how much: the Limiter and InFlight interfaces, the
// GCRA arithmetic, the in-process limiter, the block cache in front of a
// shared limiter (cached.go), upload admission, and every limit key
// (limitkeys.go).
//
// It speaks neither HTTP nor Redis: the edge (package gateway) turns its
// errors and Decisions into statuses and headers, and the limiters shared
// between replicas through Redis live in policy/limits/redis.
package limits
