package gateway

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// httpMetrics counts requests by route pattern (never the raw path, whose
// cardinality a client controls), method and status.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec

	// series caches the children of one label set, so a request costs a
	// map lookup instead of two label hashes and lookups in the vectors.
	mu     sync.RWMutex
	series map[seriesKey]*series
}

type seriesKey struct {
	route, method string
	status        int
}

type series struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// maxCachedSeries bounds the cache; label sets past it (there are not
// that many routes, methods and statuses) are looked up in the vectors.
const maxCachedSeries = 4096

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_http_requests_total",
			Help: "HTTP requests by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gateway_http_request_duration_seconds",
			Help:    "HTTP request duration by route pattern, method and status.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"route", "method", "status"}),
		series: map[seriesKey]*series{},
	}
	reg.MustRegister(m.requests, m.duration)
	return m
}

func (m *httpMetrics) observe(route, method string, status int, elapsed time.Duration) {
	method = methodLabel(method)
	k := seriesKey{route: route, method: method, status: status}
	m.mu.RLock()
	s, ok := m.series[k]
	m.mu.RUnlock()
	if !ok {
		code := statusText(status)
		s = &series{requests: m.requests.WithLabelValues(route, method, code), duration: m.duration.WithLabelValues(route, method, code)}
		m.mu.Lock()
		if len(m.series) < maxCachedSeries {
			m.series[k] = s
		}
		m.mu.Unlock()
	}
	s.requests.Inc()
	s.duration.Observe(elapsed.Seconds())
}

// methodLabel is the method as a label: the standard methods by name, any
// other "OTHER", since a client may send any token as a method and each
// would be a new series otherwise.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// statusLabels avoids formatting the common statuses on every request.
var statusLabels = func() map[int]string {
	m := make(map[int]string)
	for c := 100; c < 600; c++ {
		m[c] = strconv.Itoa(c)
	}
	return m
}()

func statusText(code int) string {
	if s, ok := statusLabels[code]; ok {
		return s
	}
	return strconv.Itoa(code)
}
