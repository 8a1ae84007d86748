package gateway

import (
	"net/http"
	"testing"
)

func TestRequireManagement(t *testing.T) {
	api, _ := newTestAPI(t, Options{})
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	chain := observe(api.observation)(requireKey(api.authn, api.log)(requireManagement(api.log)(ok)))
	for _, tc := range []struct {
		token string
		want  int
	}{
		{"management", http.StatusNoContent},
		{"standard", http.StatusForbidden},
		{"", http.StatusUnauthorized},
	} {
		if rec := do(t, chain, "GET", "/api/v1/workspaces", tc.token, nil); rec.Code != tc.want {
			t.Errorf("token %q: status = %d, want %d", tc.token, rec.Code, tc.want)
		}
	}
	// Below no requireKey, there is no caller to be a manager: 401.
	if rec := do(t, observe(api.observation)(requireManagement(api.log)(ok)), "GET", "/", "management", nil); rec.Code != http.StatusUnauthorized {
		t.Errorf("without requireKey: status = %d, want 401", rec.Code)
	}
}
