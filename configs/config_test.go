package configs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func noEnv(string) string { return "" }

func TestParseEmptyIsDefault(t *testing.T) {
	cfg, err := Parse(nil, noEnv)
	if err != nil {
		t.Fatalf("Parse(empty) = %v", err)
	}
	if cfg.Server.Listen != "127.0.0.1:8080" || cfg.Metadata.Driver != "sqlite" || cfg.Storage.Backend != "fs" {
		t.Fatalf("defaults not applied: %+v", cfg)
	}
	if cfg.Limits.MaxFileBytes != 104857600 {
		t.Fatalf("max_file_bytes default = %d", cfg.Limits.MaxFileBytes)
	}
}

func TestParseValues(t *testing.T) {
	yml := `
server: {listen: "0.0.0.0:9000", drain_delay: 5s, trusted_proxies: [10.0.0.0/8, 192.168.1.1], lingering_close: {max_bytes: 256MiB}}
redis: {url: "redis://:${REDIS_PW}@redis:6379/0", replicas_hint: 3}
limits: {workspace_storage_bytes: 20GiB, upload_bytes: {bytes: 1GB, per: 30m}, upload_lease: 90s}
`
	env := map[string]string{"REDIS_PW": "s3cret"}
	cfg, err := Parse([]byte(yml), func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Listen != "0.0.0.0:9000" || cfg.Server.DrainDelay != 5*time.Second {
		t.Errorf("server = %+v", cfg.Server)
	}
	if got := cfg.Redis.URL; got != "redis://:s3cret@redis:6379/0" {
		t.Errorf("redis.url = %q, want the variable expanded", got)
	}
	if cfg.Limits.WorkspaceStorageBytes != 20<<30 || cfg.Limits.UploadLease != 90*time.Second || cfg.Limits.UploadBytes.Bytes != 1_000_000_000 || cfg.Limits.UploadBytes.Per != 30*time.Minute {
		t.Errorf("limits = %+v", cfg.Limits)
	}
	if got := len(cfg.Server.TrustedPrefixes()); got != 2 {
		t.Errorf("trusted prefixes = %d, want 2", got)
	}
	if lc := cfg.Server.LingeringClose; lc.MaxBytes != 256<<20 || lc.Timeout != 30*time.Second {
		t.Errorf("lingering_close = %+v, want the bytes set and the default timeout kept", lc)
	}
	// Defaults survive a partial section.
	if cfg.Server.ReadHeaderTimeout != 10*time.Second {
		t.Errorf("read_header_timeout default lost: %v", cfg.Server.ReadHeaderTimeout)
	}
}

func TestParseBadFiles(t *testing.T) {
	tests := []struct {
		file string
		want []string // every problem must be named
	}{
		{"unknown_key.yaml", []string{"server.listn: unknown key", "storage.fs.dri: unknown key"}},
		{"wrong_type.yaml", []string{"server.idle_timeout:", "limits.max_file_bytes:", "limits.uploads_in_flight_per_key:"}},
		{"invalid_values.yaml", []string{
			"server.listen: want host:port",
			`log.level: "loud" is not one of`,
			`metadata.driver: "mysql" is not one of`,
			"storage.s3.bucket: must be set",
			"limits.rate.files.requests: must be greater than zero",
			"server.lingering_close.max_bytes:",
			"server.lingering_close.timeout: must be greater than zero",
			"limits.upload_lease: must be at least 3s",
			"sweeper.grace: must be longer than the longest upload the limits allow (2h51m10s",
			"sweeper.batch: must be at least 1",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Parse(data, noEnv)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("Parse = %v, want *Error", err)
			}
			msg := ce.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error does not name %q:\n%s", w, msg)
				}
			}
			if len(ce.Problems) < len(tt.want) {
				t.Errorf("got %d problems, want at least %d: %v", len(ce.Problems), len(tt.want), ce.Problems)
			}
		})
	}
}

func TestParseUnsetVariable(t *testing.T) {
	_, err := Parse([]byte(`metadata: {driver: postgres, dsn: "${PG_URL}"}`), noEnv)
	if err == nil || !strings.Contains(err.Error(), "metadata.dsn: environment variable PG_URL is not set") {
		t.Fatalf("Parse = %v, want the unset variable named with its path", err)
	}
}

func TestParseSyntaxError(t *testing.T) {
	if _, err := Parse([]byte("server: [unclosed"), noEnv); err == nil {
		t.Fatal("Parse accepted malformed YAML")
	}
}

// Without a minimum upload rate no grace outlasts an upload, so the sweeper
// (which would take a live upload's parts) must be off.
func TestSweeperNeedsAMinimumUploadRate(t *testing.T) {
	_, err := Parse([]byte("server: {min_upload_rate: 0}\n"), noEnv)
	var ce *Error
	if !errors.As(err, &ce) || !strings.Contains(ce.Error(), "sweeper.interval: must be 0") {
		t.Fatalf("Parse = %v, want a problem of sweeper.interval", err)
	}
	if _, err := Parse([]byte("server: {min_upload_rate: 0}\nsweeper: {interval: 0s}\n"), noEnv); err != nil {
		t.Fatalf("with the sweeper off: %v", err)
	}
}

// TestParseDurationsAsBareNumbers: 0 is a duration like 0s, as the
// README's "0 turns it off" promises, and any other bare number is refused
// for its missing unit, never taken as nanoseconds.
func TestParseDurationsAsBareNumbers(t *testing.T) {
	cfg, err := Parse([]byte("sweeper:\n  interval: 0\nserver:\n  drain_delay: 0\n"), noEnv)
	if err != nil {
		t.Fatalf("interval: 0 = %v", err)
	}
	if cfg.Sweeper.Interval != 0 || cfg.Server.DrainDelay != 0 {
		t.Errorf("interval %v, drain_delay %v; want 0", cfg.Sweeper.Interval, cfg.Server.DrainDelay)
	}
	_, err = Parse([]byte("sweeper:\n  interval: 5\n"), noEnv)
	var ce *Error
	if !errors.As(err, &ce) || !strings.Contains(ce.Error(), "sweeper.interval:") {
		t.Errorf("interval: 5 = %v, want refused by its path", err)
	}
}

// TestParseSentinel: the Sentinels are reached by their addresses and the
// master's name; a name without addresses is refused by its path.
func TestParseSentinel(t *testing.T) {
	cfg, err := Parse([]byte("redis:\n  addrs: [\"10.0.0.1:26379\", \"10.0.0.2:26379\"]\n  master_name: gw\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Redis.MasterName != "gw" || len(cfg.Redis.Addrs) != 2 || !cfg.Redis.Enabled() {
		t.Errorf("redis = %+v", cfg.Redis)
	}
	_, err = Parse([]byte("redis:\n  master_name: gw\n"), noEnv)
	var ce *Error
	if !errors.As(err, &ce) || !strings.Contains(ce.Error(), "redis.master_name: needs redis.addrs") {
		t.Errorf("master_name alone = %v, want refused by its path", err)
	}
}

// TestParseRedisTLS: the tls block applies once enabled (or with a
// rediss:// URL), and a certificate goes with its key.
func TestParseRedisTLS(t *testing.T) {
	cfg, err := Parse([]byte("redis:\n  addrs: [\"n1:6379\"]\n  sentinel_password: sp\n  tls: {enabled: true, ca_file: ca.pem, cert_file: c.pem, key_file: k.pem}\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Redis.TLS.Enabled || cfg.Redis.TLS.CAFile != "ca.pem" || cfg.Redis.SentinelPassword != "sp" {
		t.Errorf("redis = %+v", cfg.Redis)
	}
	for file, want := range map[string]string{
		"redis:\n  addrs: [\"n1:6379\"]\n  tls: {enabled: true, cert_file: c.pem}\n": "redis.tls: cert_file and key_file go together",
		"redis:\n  addrs: [\"n1:6379\"]\n  tls: {ca_file: ca.pem}\n":                 "redis.tls.enabled: must be true",
	} {
		_, err := Parse([]byte(file), noEnv)
		var ce *Error
		if !errors.As(err, &ce) || !strings.Contains(ce.Error(), want) {
			t.Errorf("%q = %v, want %q", file, err, want)
		}
	}
	if _, err := Parse([]byte("redis:\n  url: rediss://h:6380/0\n  tls: {ca_file: ca.pem}\n"), noEnv); err != nil {
		t.Errorf("a rediss:// URL with a CA file: %v", err)
	}
}
