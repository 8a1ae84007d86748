package app

import (
	"testing"
	"time"

	"github.com/aigateway/gateway/configs"
	redislimit "github.com/aigateway/gateway/policy/limits/redis"
)

// TestRedisClientOptionsCarryEveryTopology: what the configuration says of
// Redis reaches the client, the Sentinel's master name included (without
// it, Sentinels' addresses were taken for a Cluster's).
func TestRedisClientOptionsCarryEveryTopology(t *testing.T) {
	r := configs.Redis{Addrs: []string{"10.0.0.1:26379"}, MasterName: "gw", Username: "u", Password: "p", Timeout: time.Second}
	o := redisClientOptions(r)
	if o.MasterName != "gw" || len(o.Addrs) != 1 || o.Username != "u" || o.Password != "p" || o.Timeout != time.Second || o.URL != "" {
		t.Errorf("options = %+v, want the configuration's", o)
	}
	if o := redisClientOptions(configs.Redis{URL: "redis://h:6379/0"}); o.URL != "redis://h:6379/0" || o.MasterName != "" || o.TLS != nil {
		t.Errorf("single server options = %+v", o)
	}
	// TLS reaches every topology, and the Sentinels' own credentials.
	cluster := configs.Redis{Addrs: []string{"n1:6379"}, SentinelUsername: "su", SentinelPassword: "sp",
		TLS: configs.RedisTLS{Enabled: true, CAFile: "ca.pem", ServerName: "redis.internal", CertFile: "c.pem", KeyFile: "k.pem"}}
	if o := redisClientOptions(cluster); o.TLS == nil || *o.TLS != (redislimit.TLSOptions{CAFile: "ca.pem", ServerName: "redis.internal", CertFile: "c.pem", KeyFile: "k.pem"}) ||
		o.SentinelUsername != "su" || o.SentinelPassword != "sp" {
		t.Errorf("cluster options = %+v (tls %+v)", o, o.TLS)
	}
	if o := redisClientOptions(configs.Redis{URL: "rediss://h:6380/0"}); o.TLS == nil {
		t.Error("a rediss:// URL without a tls block got no TLS options")
	}
}
