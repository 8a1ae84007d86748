package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestDailyUsageQuery(t *testing.T) {
	var query atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		query.Store(r.URL.Path + "?" + r.URL.RawQuery)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":[{"date":"2026-11-30","usage":1.5,"byok_usage":0.25},{"date":"2026-12-01","usage":0,"byok_usage":0}]}`)
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv)
	for q, want := range map[DailyQuery]string{
		{}:                               "/api/v1/usage/daily?",
		{Days: 7, Workspace: "team"}:     "/api/v1/usage/daily?days=7&workspace_id=team",
		{KeyHash: "00000000000000a1"}:    "/api/v1/usage/daily?key=00000000000000a1",
		{Days: 90, Workspace: "a b&c=d"}: "/api/v1/usage/daily?days=90&workspace_id=a+b%26c%3Dd",
	} {
		days, err := c.DailyUsage(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if got := query.Load(); got != want {
			t.Errorf("%+v asked %s, want %s", q, got, want)
		}
		day, err := days[0].Day()
		if len(days) != 2 || days[0].Usage != 1.5 || days[0].BYOKUsage != 0.25 || err != nil ||
			!day.Equal(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("days %+v (%v, %v)", days, day, err)
		}
	}
}
