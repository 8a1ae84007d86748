package accesslog

import (
	"bytes"
	"go.opentelemetry.io/otel/trace"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapLine is the line the gateway's zap logger wrote for e (cmd/gateway/app's
// NewLogger: the production JSON encoder, "ts" in ISO 8601).
func zapLine(t *testing.T, e Entry) string {
	t.Helper()
	cfg := zap.NewProductionEncoderConfig()
	cfg.TimeKey = "ts"
	cfg.EncodeTime = zapcore.ISO8601TimeEncoder
	buf, err := zapcore.NewJSONEncoder(cfg).EncodeEntry(
		zapcore.Entry{Level: zapcore.InfoLevel, Time: e.Time, Message: "request"},
		e.Fields())
	if err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestLineIsZapsLine(t *testing.T) {
	base := time.Date(2026, 11, 23, 12, 31, 33, 123456789, time.UTC)
	plus := time.FixedZone("CET", 3600)
	minus := time.FixedZone("", -(5*3600 + 30*60))
	ok := Entry{
		Time: base, Method: "GET", Route: "/api/v1/model/{author}/{slug}", Status: 200, Bytes: 1834,
		Duration: 123456 * time.Nanosecond, RequestID: "abcdefghijklmnop-1a", KeyID: "k_0123", Client: "127.0.0.1",
	}
	with := func(f func(*Entry)) Entry { e := ok; f(&e); return e }
	cases := map[string]Entry{
		"lookup":              ok,
		"zero":                {Time: base},
		"no milliseconds":     with(func(e *Entry) { e.Time = base.Truncate(time.Second) }),
		"999 ms":              with(func(e *Entry) { e.Time = base.Truncate(time.Second).Add(999999999) }),
		"7 ms":                with(func(e *Entry) { e.Time = base.Truncate(time.Second).Add(7 * time.Millisecond) }),
		"zone east":           with(func(e *Entry) { e.Time = base.In(plus) }),
		"zone west, half":     with(func(e *Entry) { e.Time = base.In(minus) }),
		"local":               with(func(e *Entry) { e.Time = base.Local() }),
		"year 10000":          with(func(e *Entry) { e.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }),
		"long duration":       with(func(e *Entry) { e.Duration = 3*time.Hour + 7*time.Nanosecond }),
		"whole seconds":       with(func(e *Entry) { e.Duration = 2 * time.Second }),
		"negative duration":   with(func(e *Entry) { e.Duration = -time.Millisecond }),
		"max duration":        with(func(e *Entry) { e.Duration = math.MaxInt64 }),
		"negative bytes":      with(func(e *Entry) { e.Bytes = -1; e.Status = 499 }),
		"unmatched":           with(func(e *Entry) { e.Route = "unmatched"; e.Status = 404; e.KeyID = "" }),
		"ipv6 client":         with(func(e *Entry) { e.Client = "2001:db8::1" }),
		"escapes":             with(func(e *Entry) { e.Method = "A\"B\\C\nD\rE\tF\x00G\x1fH\x7f" }),
		"invalid utf-8":       with(func(e *Entry) { e.Route = "a\xffb\xc3(c\xe2\x82" }),
		"unicode":             with(func(e *Entry) { e.KeyID = "ключ-€-𝄞" }),
		"html is not escaped": with(func(e *Entry) { e.Client = "<a>&'" }),
		"traced": with(func(e *Entry) {
			e.TraceID = trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}
			e.SpanID = trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}
		}),
	}
	for name, e := range cases {
		t.Run(name, func(t *testing.T) {
			want := zapLine(t, e)
			if got := string(e.AppendJSON(nil)); got != want {
				t.Errorf("line\n got %s\nwant %s", got, want)
			}
			// The cached second serves the next line of the same second.
			if got := string(e.AppendJSON(nil)); got != want {
				t.Errorf("second line\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestTimeAcrossSeconds walks the clock over second boundaries, so a stale
// cached second would show.
func TestTimeAcrossSeconds(t *testing.T) {
	at := time.Date(2026, 12, 31, 23, 59, 58, 0, time.UTC)
	for i := 0; i < 40; i++ {
		e := Entry{Time: at.Add(time.Duration(i) * 97 * time.Millisecond)}
		if got, want := string(e.AppendJSON(nil)), zapLine(t, e); got != want {
			t.Fatalf("at %v\n got %s\nwant %s", e.Time, got, want)
		}
	}
}

func TestAppendJSONAllocatesNothing(t *testing.T) {
	e := Entry{Time: time.Now(), Method: "GET", Route: "/r", RequestID: "id", Client: "::1"}
	buf := make([]byte, 0, 512)
	e.AppendJSON(buf) // the second's stamp
	if n := testing.AllocsPerRun(100, func() { buf = e.AppendJSON(buf[:0]) }); n != 0 {
		t.Errorf("AppendJSON allocates %v times per line", n)
	}
	if !bytes.HasSuffix(buf, []byte("}\n")) {
		t.Errorf("line %q", buf)
	}
}

// TestTracedLineNamesItsSpan: the ids are written in W3C's lower-case hex,
// the form a tracing backend searches by; an untraced line has neither.
func TestTracedLineNamesItsSpan(t *testing.T) {
	e := Entry{Time: time.Unix(0, 0), TraceID: trace.TraceID{15: 1}, SpanID: trace.SpanID{0: 0xab}}
	line := string(e.AppendJSON(nil))
	if !strings.Contains(line, `"trace_id":"00000000000000000000000000000001","span_id":"ab00000000000000"`) {
		t.Errorf("line %s lacks the ids", line)
	}
	e.TraceID, e.SpanID = trace.TraceID{}, trace.SpanID{}
	if line := string(e.AppendJSON(nil)); strings.Contains(line, "trace_id") {
		t.Errorf("untraced line %s names a trace", line)
	}
}

// appendSeconds writes what zap's float encoding of float64(d)/1e9 writes,
// for durations of every magnitude a request has and past them.
func TestAppendSecondsMatchesTheFloat(t *testing.T) {
	ds := []time.Duration{0, 1, 9, 10, 999, 1000, 123456, time.Millisecond, 1500 * time.Microsecond,
		time.Second, time.Second + 1, 59*time.Second + 999999999, time.Hour, 999999*time.Second + 999999999,
		1e6 * time.Second, 1e6*time.Second + 1, -1, -time.Second, 1<<63 - 1}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		ds = append(ds, time.Duration(rng.Int64N(int64(1e6*time.Second))), time.Duration(rng.Int64N(int64(10*time.Second))))
	}
	for _, d := range ds {
		got := string(appendSeconds(nil, d))
		want := string(appendFloat(nil, float64(d)/float64(time.Second)))
		if got != want {
			t.Fatalf("appendSeconds(%d) = %s, want %s", d, got, want)
		}
	}
}
