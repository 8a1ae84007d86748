package redis

import (
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/aigateway/gateway/internal/telemetry/telemetrytest"
	"github.com/aigateway/gateway/internal/testenv"
	"github.com/aigateway/gateway/policy/limits"
)

// TestDecisionsAreSpansOfTheCallersTrace, against the real server: with
// traces on, a client made by NewClient makes a span per command under the
// caller's span, naming the database system but not the command's
// arguments (limit keys hold key ids).
func TestDecisionsAreSpansOfTheCallersTrace(t *testing.T) {
	rec := telemetrytest.Record(t, nil)
	c, err := NewClient(ClientOptions{URL: testenv.RedisURL(t), Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	lim := NewLimiter(c, "test:trace:")

	ctx, parent := otel.Tracer("test").Start(t.Context(), "request")
	const key = "key-k_secretish"
	if _, err := lim.Allow(ctx, key, limits.Limit{Rate: 10, Per: time.Second, Burst: 10}, 1); err != nil {
		t.Fatal(err)
	}
	parent.End()
	var found int
	for _, s := range rec.Ended() {
		if s.Parent().SpanID() != parent.SpanContext().SpanID() {
			continue
		}
		found++
		system := ""
		for _, a := range s.Attributes() {
			if strings.Contains(a.Value.Emit(), key) {
				t.Errorf("span %s attribute %s holds the limit key", s.Name(), a.Key)
			}
			if a.Key == "db.system.name" || a.Key == "db.system" {
				system = a.Value.Emit()
			}
		}
		if system != "redis" {
			t.Errorf("span %s: db system %q", s.Name(), system)
		}
	}
	if found == 0 {
		t.Fatal("no Redis span under the caller's span")
	}
}
