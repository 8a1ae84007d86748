package app

import (
	"testing"
	"time"

	"github.com/aigateway/gateway/configs"
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
	if o := redisClientOptions(configs.Redis{URL: "redis://h:6379/0"}); o.URL != "redis://h:6379/0" || o.MasterName != "" {
		t.Errorf("single server options = %+v", o)
	}
}
