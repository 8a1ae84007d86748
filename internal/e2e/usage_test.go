package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/client"
)

// TestDailyUsage: usage reported through the API over three days comes back
// per UTC day from GET /usage/daily, for a key, a workspace (its deleted
// key included) and all of the user's keys, exact to the millionth and with
// the days without usage at zero; what a standard key and another user may
// ask for; on both metadata stores, every answer checked against the
// OpenAPI document.
func TestDailyUsage(t *testing.T) {
	for _, sc := range metadataStores() {
		t.Run(sc.name, func(t *testing.T) {
			cfg := testConfig(t)
			sc.configure(t, &cfg)
			g := startGateway(t, cfg)
			ctx := context.Background()
			admin := g.newClient(t, g.newKey(t, "alice", "--management"))
			svc := g.newClient(t, g.newKey(t, "alice", "--service"))
			bobKey := g.newKey(t, "bob", "--management")
			bob := g.newClient(t, bobKey)

			team, err := admin.CreateWorkspace(ctx, client.WorkspaceCreate{Name: "Team", Slug: "team"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := admin.CreateWorkspace(ctx, client.WorkspaceCreate{Name: "Lab", Slug: "lab"}); err != nil {
				t.Fatal(err)
			}
			newKey := func(ws string) *client.CreatedKey {
				t.Helper()
				k, err := admin.CreateKey(ctx, client.KeyCreate{Name: "k", Workspace: ws})
				if err != nil {
					t.Fatal(err)
				}
				return k
			}
			k1, k2, k3 := newKey("team"), newKey("team"), newKey("lab")

			now := time.Now().UTC()
			today := now.Truncate(24 * time.Hour)
			yesterday, before := today.Add(-12*time.Hour), today.Add(-36*time.Hour)
			if _, err := svc.ReportUsage(ctx, []client.UsageReport{
				{ID: "a", KeyHash: k1.Key.Hash, Cost: 1.25},
				{ID: "b", KeyHash: k1.Key.Hash, Cost: 0.25, BYOK: true},
				{ID: "c", KeyHash: k2.Key.Hash, Cost: 0.000001, At: yesterday},
				{ID: "d", KeyHash: k3.Key.Hash, Cost: 2, At: before},
			}); err != nil {
				t.Fatal(err)
			}
			// A deleted key's usage stays its workspace's.
			if err := admin.DeleteKey(ctx, k2.Key.Hash); err != nil {
				t.Fatal(err)
			}

			type day struct{ usage, byok float64 }
			check := func(c *client.Client, q client.DailyQuery, want ...day) {
				t.Helper()
				got, err := c.DailyUsage(ctx, q)
				if err != nil {
					t.Fatalf("%+v: %v", q, err)
				}
				if time.Now().UTC().Truncate(24*time.Hour) != today {
					t.Skip("the UTC day changed during the test")
				}
				if len(got) != len(want) {
					t.Fatalf("%+v: %d days, want %d", q, len(got), len(want))
				}
				for i, w := range want {
					date := today.AddDate(0, 0, i-len(want)+1).Format(time.DateOnly)
					if got[i].Date != date || got[i].Usage != w.usage || got[i].BYOKUsage != w.byok {
						t.Errorf("%+v, day %d: %+v, want %s %v %v", q, i, got[i], date, w.usage, w.byok)
					}
				}
			}
			check(admin, client.DailyQuery{Days: 3, KeyHash: k1.Key.Hash}, day{}, day{}, day{1.5, 0.25})
			check(admin, client.DailyQuery{Days: 3, Workspace: "team"}, day{}, day{0.000001, 0}, day{1.5, 0.25})
			check(admin, client.DailyQuery{Days: 4, Workspace: team.ID}, day{}, day{}, day{0.000001, 0}, day{1.5, 0.25})
			check(admin, client.DailyQuery{Days: 3}, day{2, 0}, day{0.000001, 0}, day{1.5, 0.25})
			check(admin, client.DailyQuery{Days: 1}, day{1.5, 0.25})
			all, err := admin.DailyUsage(ctx, client.DailyQuery{})
			if err != nil || len(all) != 30 {
				t.Fatalf("the default history: %d days, %v", len(all), err)
			}

			// A standard key sees itself and its own workspace, nothing else.
			standard := g.newClient(t, k1.Secret)
			check(standard, client.DailyQuery{Days: 2}, day{}, day{1.5, 0.25})
			check(standard, client.DailyQuery{Days: 2, Workspace: "team"}, day{0.000001, 0}, day{1.5, 0.25})
			_, err = standard.DailyUsage(ctx, client.DailyQuery{KeyHash: k3.Key.Hash})
			apiError(t, err, http.StatusForbidden)
			_, err = standard.DailyUsage(ctx, client.DailyQuery{Workspace: "lab"})
			apiError(t, err, http.StatusForbidden)

			// Another user's key and workspace answer as unknown ones do.
			for _, probe := range []struct{ param, other, unknown string }{
				{"key", k1.Key.Hash, "00000000000000ee"},
				{"workspace_id", team.ID, "9c0d7a3e-0000-4000-8000-000000000000"},
				{"workspace_id", "team", "nowhere"},
			} {
				other, otherBody := g.do(t, "GET", "/api/v1/usage/daily?"+probe.param+"="+probe.other, bobKey, nil, nil)
				unknown, unknownBody := g.do(t, "GET", "/api/v1/usage/daily?"+probe.param+"="+probe.unknown, bobKey, nil, nil)
				if other.StatusCode != http.StatusNotFound || unknown.StatusCode != http.StatusNotFound || string(otherBody) != string(unknownBody) {
					t.Errorf("%s: another user's answers %d %s, an unknown one %d %s; want the same 404",
						probe.param, other.StatusCode, otherBody, unknown.StatusCode, unknownBody)
				}
			}
			check(bob, client.DailyQuery{Days: 1}, day{})

			// Parameters out of range, unknown or repeated are refused by name.
			for query, field := range map[string]string{
				"days=91": "days", "days=0": "days", "day=3": "day", "days=3&days=4": "days",
				"key=" + k1.Key.Hash + "&workspace_id=team": "key",
			} {
				res, body := g.do(t, "GET", "/api/v1/usage/daily?"+query, "", nil, http.Header{"Authorization": {"Bearer " + bobKey}})
				if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), fmt.Sprintf("%q", field)) {
					t.Errorf("%s: %d %s, want a 400 naming %s", query, res.StatusCode, body, field)
				}
			}
		})
	}
}
