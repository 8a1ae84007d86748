package sqlstore

import (
	"strings"
	"testing"

	"go.opentelemetry.io/otel"

	"github.com/aigateway/gateway/internal/telemetry/telemetrytest"
)

// TestStatementsAreSpansOfTheCallersTrace: with traces on, a Store opened
// then makes a span per statement under the caller's span, on both
// databases, with the statement's text and the database system but never
// the statement's arguments.
func TestStatementsAreSpansOfTheCallersTrace(t *testing.T) {
	rec := telemetrytest.Record(t, nil)
	for name, b := range map[string]backend{"sqlite": sqliteBackend(), "postgresql": postgresBackend(t)} {
		t.Run(name, func(t *testing.T) {
			s := b.store(t)
			ctx, parent := otel.Tracer("test").Start(testContext(t), "request")
			const user = "user-with-a-telling-name"
			if err := s.EnsureUser(ctx, user); err != nil {
				t.Fatal(err)
			}
			parent.End()
			found := 0
			for _, span := range rec.Ended() {
				if span.SpanContext().TraceID() != parent.SpanContext().TraceID() {
					continue
				}
				attrs := map[string]string{}
				for _, a := range span.Attributes() {
					attrs[string(a.Key)] = a.Value.Emit()
					if strings.Contains(a.Value.Emit(), user) {
						t.Errorf("span %s attribute %s holds an argument", span.Name(), a.Key)
					}
				}
				if span.Name() == "request" {
					continue
				}
				found++
				if attrs["db.system.name"] != name {
					t.Errorf("span %s: db.system.name %q, want %q", span.Name(), attrs["db.system.name"], name)
				}
				if q, ok := attrs["db.query.text"]; ok && !strings.Contains(strings.ToLower(q), "users") && span.Name() == "sql.conn.exec" {
					t.Errorf("exec span statement %q", q)
				}
			}
			if found == 0 {
				t.Fatal("no statement span in the caller's trace")
			}
		})
	}
}
