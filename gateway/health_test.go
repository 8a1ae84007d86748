package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

func TestReadyzChecks(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		code   int
		status string
		check  string
	}{
		{"ok", nil, 200, "ready", "ok"},
		{"degraded", Degraded{Reason: "local limits"}, 200, "degraded", "degraded: local limits"},
		{"wrapped degraded", fmt.Errorf("redis at 10.0.0.7:6379: %w", Degraded{Reason: "local limits"}), 200, "degraded", "degraded: local limits"},
		{"failed", errors.New("dial 10.0.0.7:5432: refused"), 503, "unready", "unavailable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api, _ := newTestAPI(t, Options{ReadyChecks: map[string]ReadyCheck{
				"dep": func(context.Context) error { return tc.err },
			}})
			rec := do(t, api.Handler(), "GET", "/readyz", "", nil)
			var body struct {
				Status string            `json:"status"`
				Checks map[string]string `json:"checks"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q: %v", rec.Body, err)
			}
			if rec.Code != tc.code || body.Status != tc.status || body.Checks["dep"] != tc.check {
				t.Errorf("readyz = %d %+v, want %d %s with dep %q", rec.Code, body, tc.code, tc.status, tc.check)
			}
		})
	}
}
