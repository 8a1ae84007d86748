package gateway

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"time"

	"go.uber.org/zap"
)

// ReadyCheck reports whether one dependency can serve. A check that only
// degrades the service (Redis, whose loss falls back to local limits)
// returns a Degraded error (possibly wrapped) instead of failing readiness.
type ReadyCheck func(ctx context.Context) error

// Degraded marks a readiness problem that does not make the replica unready.
type Degraded struct{ Reason string }

func (d Degraded) Error() string { return d.Reason }

func (a *API) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz fails while draining, so the load balancer stops sending traffic
// before the listener closes, and when a required dependency is down.
func (a *API) readyz(w http.ResponseWriter, r *http.Request) {
	if a.draining.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "draining"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	status, ready := "ready", true
	checks := make(map[string]string, len(a.ready))
	names := make([]string, 0, len(a.ready))
	for name := range a.ready {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		err := a.ready[name](ctx)
		var degraded Degraded
		switch {
		case err == nil:
			checks[name] = "ok"
		case errors.As(err, &degraded):
			// The reason only: text wrapped around it may name addresses.
			checks[name] = "degraded: " + degraded.Reason
			status = "degraded"
		default:
			// Dependency errors can carry addresses; the detail goes to
			// the log, the probe only needs to know which one failed.
			checks[name] = "unavailable"
			ready = false
			a.log.Warn("readiness check failed", zap.String("check", name), zap.Error(err))
		}
	}
	code := http.StatusOK
	if !ready {
		status, code = "unready", http.StatusServiceUnavailable
	}
	writeJSON(w, code, map[string]any{"status": status, "checks": checks})
}
