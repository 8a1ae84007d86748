package testenv

import (
	"strings"
	"testing"
)

// Environment variables of the Redis Cluster and Sentinel group that
// deploy/testenv/run.sh starts beside the single Redis.
const (
	RedisClusterAddrsVar   = "GATEWAY_TEST_REDIS_CLUSTER_ADDRS"   // host:port,... of every node (3 masters, 3 replicas)
	RedisSentinelAddrsVar  = "GATEWAY_TEST_REDIS_SENTINEL_ADDRS"  // host:port,... of the three Sentinels
	RedisSentinelMasterVar = "GATEWAY_TEST_REDIS_SENTINEL_MASTER" // the name the Sentinels know the master by
)

// RedisClusterAddrs returns the addresses of the shared Redis Cluster's
// nodes, or skips (fails under CI=true) when it was not started. Tests
// share it: they use keys of their own and never stop its nodes.
func RedisClusterAddrs(t testing.TB) []string {
	t.Helper()
	return strings.Split(Require(t, RedisClusterAddrsVar), ",")
}

// RedisSentinel returns the addresses of the shared Sentinels and the name
// of their master, or skips (fails under CI=true) when they were not
// started. Tests share the group: they use keys of their own and never
// stop its servers.
func RedisSentinel(t testing.TB) (addrs []string, master string) {
	t.Helper()
	addrs = strings.Split(Require(t, RedisSentinelAddrsVar), ",")
	return addrs, Require(t, RedisSentinelMasterVar)
}
