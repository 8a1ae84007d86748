package e2e

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/client"
)

// TestActivity: reports that say what was served come back from GET
// /activity per day, model, endpoint and provider with their requests and
// tokens, newest day first and the most spent first, the catalog's
// canonical slug beside each model; per workspace, for one day, one key or
// one workspace; only for a management key and its own user's keys; a
// report replayed with other content is 409 and counts nothing. On both
// metadata stores, every answer checked against the OpenAPI document.
func TestActivity(t *testing.T) {
	for _, sc := range metadataStores() {
		t.Run(sc.name, func(t *testing.T) {
			cfg := testConfig(t)
			sc.configure(t, &cfg)
			g := startGateway(t, cfg)
			ctx := context.Background()
			admin := g.newClient(t, g.newKey(t, "alice", "--management"))
			svc := g.newClient(t, g.newKey(t, "alice", "--service"))
			bob := g.newClient(t, g.newKey(t, "bob", "--management"))
			team, err := admin.CreateWorkspace(ctx, client.WorkspaceCreate{Name: "Team", Slug: "team"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := admin.CreateWorkspace(ctx, client.WorkspaceCreate{Name: "Lab", Slug: "lab"}); err != nil {
				t.Fatal(err)
			}
			k1, err := admin.CreateKey(ctx, client.KeyCreate{Name: "k1", Workspace: "team"})
			if err != nil {
				t.Fatal(err)
			}
			k2, err := admin.CreateKey(ctx, client.KeyCreate{Name: "k2", Workspace: "lab"})
			if err != nil {
				t.Fatal(err)
			}
			today := time.Now().UTC().Truncate(24 * time.Hour)
			yesterday, before := today.Add(-12*time.Hour), today.Add(-36*time.Hour)
			served := func(id, key string, cost float64, byok bool, at time.Time, model string) client.UsageReport {
				return client.UsageReport{ID: id, KeyHash: key, Cost: cost, BYOK: byok, At: at, Model: model,
					ProviderName: "AionLabs", EndpointID: "ep-1", PromptTokens: 10, CompletionTokens: 20, ReasoningTokens: 5}
			}
			reports := []client.UsageReport{
				served("a", k1.Key.Hash, 1.5, false, yesterday, "aion-labs/aion-2.0"),
				served("b", k1.Key.Hash, 0.5, true, yesterday, "aion-labs/aion-2.0"),
				served("c", k2.Key.Hash, 0.25, false, yesterday, "aion-labs/aion-2.0"),
				served("d", k2.Key.Hash, 3, false, yesterday, "someone/unknown-model"),
				served("e", k1.Key.Hash, 0.75, false, before, "aion-labs/aion-2.0"),
				served("today", k1.Key.Hash, 100, false, time.Time{}, "aion-labs/aion-2.0"), // today: not a completed day
			}
			if res, err := svc.ReportUsage(ctx, reports); err != nil || res.Accepted != len(reports) {
				t.Fatalf("report: %+v, %v", res, err)
			}
			// The same reports again are duplicates; one changed is 409 and
			// nothing of its batch counts.
			if res, err := svc.ReportUsage(ctx, reports[:5]); err != nil || res.Duplicates != 5 {
				t.Fatalf("replay: %+v, %v", res, err)
			}
			changed := reports[0]
			changed.Cost = 2
			_, err = svc.ReportUsage(ctx, []client.UsageReport{served("f", k1.Key.Hash, 9, false, yesterday, "aion-labs/aion-2.0"), changed})
			apiError(t, err, http.StatusConflict)

			rows, err := admin.Activity(ctx, client.ActivityQuery{})
			if err != nil {
				t.Fatal(err)
			}
			if time.Now().UTC().Truncate(24*time.Hour) != today {
				t.Skip("the UTC day changed during the test")
			}
			type row struct {
				date, model, permaslug string
				usage, byok            float64
				requests               int64
			}
			want := []row{
				{yesterday.Format(time.DateOnly), "someone/unknown-model", "someone/unknown-model", 3, 0, 1},
				{yesterday.Format(time.DateOnly), "aion-labs/aion-2.0", "aion-labs/aion-2.0-20260223", 2.25, 0.5, 3},
				{before.Format(time.DateOnly), "aion-labs/aion-2.0", "aion-labs/aion-2.0-20260223", 0.75, 0, 1},
			}
			if len(rows) != len(want) {
				t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
			}
			for i, w := range want {
				r := rows[i]
				got := row{r.Date, r.Model, r.ModelPermaslug, r.Usage, r.BYOKUsage, r.Requests}
				if got != w || r.ProviderName != "AionLabs" || r.EndpointID != "ep-1" || r.PromptTokens != 10*r.Requests ||
					r.CompletionTokens != 20*r.Requests || r.ReasoningTokens != 5*r.Requests || r.WorkspaceID != nil {
					t.Errorf("row %d: %+v, want %+v", i, r, w)
				}
			}

			perWS, err := admin.Activity(ctx, client.ActivityQuery{Date: yesterday, ByWorkspace: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(perWS) != 3 || perWS[1].WorkspaceID == nil || *perWS[1].WorkspaceID != team.ID || perWS[1].Usage != 2 {
				t.Errorf("yesterday per workspace: %+v", perWS)
			}
			if one, err := admin.Activity(ctx, client.ActivityQuery{KeyHash: k2.Key.Hash}); err != nil || len(one) != 2 || one[0].Usage != 3 {
				t.Errorf("one key: %+v, %v", one, err)
			}
			if lab, err := admin.Activity(ctx, client.ActivityQuery{Workspace: "lab"}); err != nil || len(lab) != 2 {
				t.Errorf("one workspace: %+v, %v", lab, err)
			}

			// Another user's key and workspace are not found; a standard
			// key may not ask; nor may today or 31 days ago.
			_, err = bob.Activity(ctx, client.ActivityQuery{KeyHash: k1.Key.Hash})
			apiError(t, err, http.StatusNotFound)
			_, err = bob.Activity(ctx, client.ActivityQuery{Workspace: team.ID})
			apiError(t, err, http.StatusNotFound)
			if none, err := bob.Activity(ctx, client.ActivityQuery{}); err != nil || len(none) != 0 {
				t.Errorf("bob's activity: %+v, %v", none, err)
			}
			_, err = g.newClient(t, k1.Secret).Activity(ctx, client.ActivityQuery{})
			apiError(t, err, http.StatusForbidden)
			for _, day := range []time.Time{today, today.AddDate(0, 0, -31)} {
				_, err = admin.Activity(ctx, client.ActivityQuery{Date: day})
				apiError(t, err, http.StatusBadRequest)
			}
			res, body := g.do(t, "GET", "/api/v1/activity?user_id=bob", "", nil, http.Header{"Authorization": {"Bearer " + g.newKey(t, "alice", "--management")}})
			if res.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "only its own user's activity") {
				t.Errorf("another user_id: %d %s", res.StatusCode, body)
			}
			var ce *client.Error
			if !errors.As(err, &ce) {
				t.Errorf("a refusal is not a *client.Error: %v", err)
			}
		})
	}
}
