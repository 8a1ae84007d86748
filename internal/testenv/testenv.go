// Package testenv gives integration tests the addresses of the real servers
// that `make test` starts (see deploy/testenv). Locally a missing server skips
// the test; under CI=true it fails it, so a broken provisioning step can never
// turn into a green run that tested nothing.
package testenv

import (
	"os"
	"testing"
)

// Environment variables exported by deploy/testenv/run.sh.
const (
	RedisURLVar    = "GATEWAY_TEST_REDIS_URL"     // redis://127.0.0.1:PORT/0
	RedisServerVar = "GATEWAY_TEST_REDIS_SERVER"  // path of the redis-server binary, for tests that start, kill and restart their own
	PostgresURLVar = "GATEWAY_TEST_POSTGRES_URL"  // postgres://app@127.0.0.1:PORT/postgres?sslmode=disable
	S3EndpointVar  = "GATEWAY_TEST_S3_ENDPOINT"   // http://127.0.0.1:PORT
	S3AccessKeyVar = "GATEWAY_TEST_S3_ACCESS_KEY" //
	S3SecretKeyVar = "GATEWAY_TEST_S3_SECRET_KEY" //
	S3ServerVar    = "GATEWAY_TEST_S3_SERVER"     // path of the versitygw binary, for tests that stop the server mid-stream
	GCSEndpointVar = "GATEWAY_TEST_GCS_ENDPOINT"  // http://127.0.0.1:PORT/storage/v1/
	GCSServerVar   = "GATEWAY_TEST_GCS_SERVER"    // path of the fake-gcs-server binary
	ChromiumVar    = "GATEWAY_TEST_CHROMIUM"      // path of Debian's chromium, for the console's browser tests
	AxeVar         = "GATEWAY_TEST_AXE"           // path of axe-core's axe.min.js, the accessibility rules the browser tests run
)

// InCI reports whether the tests run under CI, where every integration
// server must be present.
func InCI() bool { return os.Getenv("CI") == "true" }

// Require returns the value of the environment variable name. When it is
// empty the test is skipped, or failed under CI=true.
func Require(t testing.TB, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v != "" {
		return v
	}
	if InCI() {
		t.Fatalf("%s is not set: integration servers must be started by `make test` under CI", name)
	}
	t.Skipf("%s is not set; run `make test` to start the integration servers", name)
	return ""
}

// RedisURL is Require(t, RedisURLVar).
func RedisURL(t testing.TB) string { return Require(t, RedisURLVar) }

// PostgresURL is Require(t, PostgresURLVar).
func PostgresURL(t testing.TB) string { return Require(t, PostgresURLVar) }
