package redis

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

func TestNewRedisClientOptions(t *testing.T) {
	c, err := NewClient(ClientOptions{URL: "rediss://u:secret@example.com:6380/3", Timeout: 150 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc, ok := c.(*goredis.Client)
	if !ok {
		t.Fatalf("client is %T, want *goredis.Client", c)
	}
	o := rc.Options()
	checks := []struct {
		name      string
		got, want any
	}{
		{"addr", o.Addr, "example.com:6380"},
		{"db", o.DB, 3},
		{"username", o.Username, "u"},
		{"password", o.Password, "secret"},
		{"tls", o.TLSConfig != nil, true},
		{"context timeouts", o.ContextTimeoutEnabled, true},
		{"retries", o.MaxRetries, 0}, // -1 is normalised to 0 retries
		{"dial retries", o.DialerRetries, 1},
		{"dial timeout", o.DialTimeout, 150 * time.Millisecond},
		{"read timeout", o.ReadTimeout, 150 * time.Millisecond},
		{"write timeout", o.WriteTimeout, 150 * time.Millisecond},
		{"pool timeout", o.PoolTimeout, 150 * time.Millisecond},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestNewRedisClientKinds(t *testing.T) {
	tests := []struct {
		name string
		o    ClientOptions
		want string
	}{
		{"url", ClientOptions{URL: "redis://127.0.0.1:6379"}, "*goredis.Client"},
		{"cluster", ClientOptions{Addrs: []string{"127.0.0.1:7000", "127.0.0.1:7001"}}, "*goredis.ClusterClient"},
		{"single-seed cluster", ClientOptions{Addrs: []string{"127.0.0.1:7000"}}, "*goredis.ClusterClient"},
		{"sentinel", ClientOptions{Addrs: []string{"127.0.0.1:26379"}, MasterName: "m"}, "*goredis.Client"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewClient(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := typeName(c); got != tc.want {
				t.Errorf("client is %s, want %s", got, tc.want)
			}
		})
	}
}

func typeName(c goredis.UniversalClient) string {
	switch c.(type) {
	case *goredis.ClusterClient:
		return "*goredis.ClusterClient"
	case *goredis.Client:
		return "*goredis.Client"
	}
	return "other"
}

func TestNewRedisClientErrorsHideThePassword(t *testing.T) {
	tests := []ClientOptions{
		{},
		{URL: "redis://a:6379", Addrs: []string{"b:6379"}},
		{URL: "http://user:hunter2@host:6379"},
		{URL: "redis://user:hunter2@host:notaport"},
		{URL: "redis://user:hunter2@host:6379/notadb"},
		{URL: "redis://user:hunter2@ho st:6379"},
	}
	for _, o := range tests {
		_, err := NewClient(o)
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: err = %v, want ErrInvalidConfig", o, err)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("error shows the password: %v", err)
		}
	}
}

// TestRedisClientHonoursDeadline: a server that accepts and never answers
// costs a call its timeout, not go-redis's defaults.
func TestRedisClientHonoursDeadline(t *testing.T) {
	srv := startRedisServer(t)
	proxy := startSlowProxy(t, srv.Addr(), 2*time.Second)
	c, err := NewClient(ClientOptions{URL: "redis://" + proxy.Addr(), Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	err = c.Ping(context.Background()).Err()
	if err == nil {
		t.Fatal("ping through a 2 s proxy succeeded within the timeout")
	}
	if el := time.Since(start); el > 400*time.Millisecond {
		t.Errorf("ping took %s with a 100 ms timeout", el)
	}
}
