package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/aigateway/gateway/catalog"
	"github.com/aigateway/gateway/gateway/accesslog"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/limits"
	"github.com/aigateway/gateway/policy/spend"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// oneKeyStore serves a single key, as the authentication cache would.
type oneKeyStore struct{ k keys.APIKey }

func (s oneKeyStore) EnsureUser(context.Context, string) error             { return nil }
func (s oneKeyStore) CreateKey(context.Context, keys.APIKey) error         { return nil }
func (s oneKeyStore) KeyByID(context.Context, string) (keys.APIKey, error) { return s.k, nil }

// discardResponse is a ResponseWriter that keeps nothing, so the benchmark
// measures the gateway, not a recorder.
type discardResponse struct {
	h    http.Header
	code int
}

func (d *discardResponse) Header() http.Header         { return d.h }
func (d *discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardResponse) WriteHeader(code int)        { d.code = code }

// lookupSetup is how the lookup path is driven: which access log, whether
// requests are rate limited.
type lookupSetup struct {
	zapAccessLog bool // the access log through zap instead of accesslog
	noAccessLog  bool
	rateLimit    bool
	// spend: the 402 decision on, with a thousand keys at their limit and
	// a hundred workspaces over a budget (none of them the caller).
	spend bool
}

// spentStandings are the standings of many spent keys and workspaces.
type spentStandings struct{ spend.Store }

func (spentStandings) Standings(context.Context, spend.Windows) ([]spend.KeyStanding, []spend.BudgetStanding, error) {
	ks := make([]spend.KeyStanding, 1000)
	for i := range ks {
		ks[i] = spend.KeyStanding{KeyID: fmt.Sprintf("%016x", i), Limit: 1, Usage: spend.Usage{Total: 1}}
	}
	bs := make([]spend.BudgetStanding, 100)
	for i := range bs {
		bs[i] = spend.BudgetStanding{Budget: spend.Budget{WorkspaceID: fmt.Sprintf("ws-%d", i), Interval: spend.Daily, Limit: 1},
			Usage: spend.Usage{Daily: 1}}
	}
	return ks, bs, nil
}

// lookupChain builds the API as the gateway runs it and returns a function
// serving one GET /api/v1/model/... through the whole middleware chain
// (request id, access log, metrics, auth, rate limit), as bench/lookup.sh
// drives it over HTTP, and returning the status answered.
func lookupChain(tb testing.TB, s lookupSetup) func() int {
	tb.Helper()
	token, key, _ := keys.NewKey()
	h := mustNew(tb, lookupOptions(tb, s, key, nil)).Handler()
	req := httptest.NewRequest("GET", "/api/v1/model/openai/gpt-4o", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	w := &discardResponse{h: http.Header{}}
	return func() int {
		clear(w.h)
		w.code = 0
		h.ServeHTTP(w, req)
		return w.code
	}
}

// lookupOptions are the API's options as the gateway runs them, with key
// the only key; log, when not nil, receives the log (and, with
// zapAccessLog, the access log).
func lookupOptions(tb testing.TB, s lookupSetup, key keys.APIKey, log *zap.Logger) Options {
	tb.Helper()
	c, err := loadShipped() // read-only, so shared with the other tests
	if err != nil {
		tb.Fatal(err)
	}
	key.UserID, key.Role, key.WorkspaceID = "u", keys.RoleStandard, "ws-caller"
	if log == nil {
		enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
		log = zap.New(zapcore.NewCore(enc, zapcore.AddSync(io.Discard), zap.InfoLevel))
	}
	// As the wiring has it: a revocation bound, kept current by the
	// revoker's reads of the change log (one here, within the bound).
	auth := keys.NewAuthenticator(oneKeyStore{key}, 1<<62)
	auth.SetRevocationBound(time.Hour)
	auth.ChangeLogRead(time.Now())
	o := Options{
		Log:              log,
		Auth:             auth,
		Catalog:          catalog.NewStatic(c, slog.New(slog.DiscardHandler)),
		DisableAccessLog: s.noAccessLog,
	}
	if !s.zapAccessLog {
		w := accesslog.NewWriter(io.Discard, accesslog.Options{})
		tb.Cleanup(func() { _ = w.Close() })
		o.AccessLog = w
	}
	if s.rateLimit {
		o.Limits = &RateLimits{
			Limiter:      limits.NewLocalLimiter(limits.LocalOptions{}),
			Default:      limits.Limit{Rate: 1 << 30, Per: time.Second, Burst: 1 << 30},
			AuthFailures: limits.Limit{Rate: 30, Per: time.Minute, Burst: 30},
		}
	}
	if s.spend {
		e := &spend.Enforcer{Store: spentStandings{}}
		if err := e.Refresh(context.Background()); err != nil {
			tb.Fatal(err)
		}
		o.SpendGuard = e
	}
	return o
}

// TestHotRoutesAnswerAsChi: the model lookup served past chi's tree walk
// (hotRoutes) answers every request as chi routing it does, with the same
// access log line, whether the table takes the request or hands it on.
func TestHotRoutesAnswerAsChi(t *testing.T) {
	token, key, _ := keys.NewKey()
	setup := lookupSetup{rateLimit: true, zapAccessLog: true}
	hotCore, hotLogs := observer.New(zap.InfoLevel)
	chiCore, chiLogs := observer.New(zap.InfoLevel)
	hotAPI := mustNew(t, lookupOptions(t, setup, key, zap.New(hotCore)))
	chiAPI := mustNew(t, lookupOptions(t, setup, key, zap.New(chiCore)))
	hot := hotAPI.Handler()
	if _, ok := hot.(http.HandlerFunc); !ok {
		t.Fatalf("Handler is a %T, not observe's", hot)
	}
	viaChi := observe(chiAPI.observation)(chiAPI.router())

	for _, tc := range []struct{ method, target, auth, inm string }{
		{"GET", "/api/v1/model/openai/gpt-4o", "Bearer " + token, ""},
		{"GET", "/api/v1/model/openai/gpt-4o", "Bearer " + token, "*"},
		{"GET", "/api/v1/model/openai/gpt-4o:free", "Bearer " + token, ""},
		{"GET", "/api/v1/model/openai/gpt-4o%3Afree", "Bearer " + token, ""},
		{"GET", "/api/v1/model/openai/gpt-4o%253Afree", "Bearer " + token, ""},
		{"GET", "/api/v1/model/%7Eopenai/gpt-latest", "Bearer " + token, ""},
		{"GET", "/api/v1/model/openai%2Fx/gpt-4o", "Bearer " + token, ""},
		{"GET", "/api/v1/model/openai/gpt%00", "Bearer " + token, ""},
		{"GET", "/api/v1/model/openai/nothing-of-that-name", "Bearer " + token, ""},
		{"GET", "/api/v1/model//gpt-4o", "Bearer " + token, ""},
		{"GET", "/api/v1/model/openai/", "Bearer " + token, ""},
		{"GET", "/api/v1/model/openai", "Bearer " + token, ""},
		{"GET", "/api/v1/model/openai/gpt-4o/", "Bearer " + token, ""},
		{"GET", "/api/v1/model/openai/gpt-4o/endpoints", "Bearer " + token, ""},
		{"GET", "/api/v1/models/openai/gpt-4o/endpoints", "Bearer " + token, ""},
		{"GET", "/api/v1/models", "Bearer " + token, ""},
		{"HEAD", "/api/v1/model/openai/gpt-4o", "Bearer " + token, ""},
		{"POST", "/api/v1/model/openai/gpt-4o", "Bearer " + token, ""},
		{"GET", "/api/v1/model/openai/gpt-4o", "", ""},
		{"GET", "/api/v1/model/openai/gpt-4o", "Bearer sk-gw-not-a-key", ""},
	} {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			answers := [2]*httptest.ResponseRecorder{}
			for i, h := range []http.Handler{hot, viaChi} {
				req := httptest.NewRequest(tc.method, tc.target, nil)
				req.RemoteAddr = "192.0.2.1:1234"
				if tc.auth != "" {
					req.Header.Set("Authorization", tc.auth)
				}
				if tc.inm != "" {
					req.Header.Set("If-None-Match", tc.inm)
				}
				answers[i] = httptest.NewRecorder()
				h.ServeHTTP(answers[i], req)
			}
			got, want := answers[0], answers[1]
			if got.Code != want.Code || got.Body.String() != want.Body.String() {
				t.Errorf("answered %d %q, chi %d %q", got.Code, got.Body, want.Code, want.Body)
			}
			for _, h := range []http.Header{got.Header(), want.Header()} {
				if h.Get("X-Request-Id") == "" {
					t.Errorf("no X-Request-Id in %v", h)
				}
				h.Del("X-Request-Id")
				h.Del("Request-Id")
			}
			if !reflect.DeepEqual(got.Header(), want.Header()) {
				t.Errorf("headers %v, chi %v", got.Header(), want.Header())
			}
			hotLine, chiLine := lastAccessLine(t, hotLogs), lastAccessLine(t, chiLogs)
			if !reflect.DeepEqual(hotLine, chiLine) {
				t.Errorf("access log %v, chi %v", hotLine, chiLine)
			}
		})
	}
}

// lastAccessLine is the last access log line in logs, without the fields
// that differ from one request to the next.
func lastAccessLine(t *testing.T, logs *observer.ObservedLogs) map[string]any {
	t.Helper()
	var line map[string]any
	for _, e := range logs.TakeAll() {
		if e.Message == "request" {
			line = e.ContextMap()
		}
	}
	if line == nil {
		t.Fatal("no access log line")
	}
	delete(line, "duration")
	delete(line, "request_id")
	return line
}

func benchmarkLookup(b *testing.B, s lookupSetup) {
	serve := lookupChain(b, s)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		serve()
	}
}

// BenchmarkModelLookupChain: access log and rate limit on, as served.
func BenchmarkModelLookupChain(b *testing.B) { benchmarkLookup(b, lookupSetup{rateLimit: true}) }

// BenchmarkModelLookupFloor: the catalog lookup and the answer's write
// alone, with no middleware: the floor the chain's cost is read against,
// in the same run.
func BenchmarkModelLookupFloor(b *testing.B) {
	c, err := loadShipped()
	if err != nil {
		b.Fatal(err)
	}
	cat := catalog.NewStatic(c, slog.New(slog.DiscardHandler))
	req := httptest.NewRequest("GET", "/api/v1/model/openai/gpt-4o", nil)
	w := &discardResponse{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		e, ok := cat.Current().Lookup("openai", "gpt-4o")
		if !ok {
			b.Fatal("openai/gpt-4o not in the shipped catalog")
		}
		writeCached(w, req, e.ETag, e.Body)
	}
}

// BenchmarkModelLookupChainSpend: as served, with the 402 decision on.
func BenchmarkModelLookupChainSpend(b *testing.B) {
	benchmarkLookup(b, lookupSetup{rateLimit: true, spend: true})
}

// BenchmarkModelLookupChainZapLog: the access log through zap, as before.
func BenchmarkModelLookupChainZapLog(b *testing.B) {
	benchmarkLookup(b, lookupSetup{rateLimit: true, zapAccessLog: true})
}

// BenchmarkModelLookupChainNoLog: the chain without any access log.
func BenchmarkModelLookupChainNoLog(b *testing.B) {
	benchmarkLookup(b, lookupSetup{rateLimit: true, noAccessLog: true})
}

// maxLookupAllocs is what a model lookup allocates through the whole chain
// (measured: the request's state and the copy of the request carrying it
// in its context). A change that adds one fails TestLookupPathAllocations:
// either remove it, or raise this with the reason in the commit.
const maxLookupAllocs = 2

// TestLookupPathAllocations guards the allocations of the lookup path, as
// served: access log and rate limit on. The access log itself allocates
// nothing.
func TestLookupPathAllocations(t *testing.T) {
	for name, s := range map[string]lookupSetup{
		"access log":    {rateLimit: true},
		"no access log": {rateLimit: true, noAccessLog: true},
		"spend on":      {rateLimit: true, spend: true},
	} {
		t.Run(name, func(t *testing.T) {
			serve := lookupChain(t, s)
			for range 10 { // caches: the key, the metric series, the time stamp
				if code := serve(); code != http.StatusOK {
					t.Fatalf("lookup answered %d", code)
				}
			}
			if n := testing.AllocsPerRun(200, func() { serve() }); n > maxLookupAllocs+raceAllocs {
				t.Errorf("a model lookup allocates %v times, more than %d", n, maxLookupAllocs+raceAllocs)
			}
		})
	}
}
