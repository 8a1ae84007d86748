package console_test

import (
	"context"
	"encoding/csv"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aigateway/gateway/client"
	"github.com/aigateway/gateway/gateway/console"
	"github.com/aigateway/gateway/policy/keys"
)

// spendFixture is a user with a workspace "Lab" (daily budget $20) and two
// keys that spent: alpha (Lab, daily limit $10) and one named like a
// formula, in the default workspace.
type spendFixture struct {
	g            *gateway
	api          *client.Client
	alpha, other string // key hashes
	lab          string // workspace id
}

// hostileProvider is a provider name that is both markup and a formula.
const hostileProvider = `=HYPERLINK("http://evil.example","<b>x</b>")`

func newSpendFixture(t *testing.T, g *gateway) spendFixture {
	t.Helper()
	ctx := context.Background()
	api := g.api(t, g.Management)
	ws, err := api.CreateWorkspace(ctx, client.WorkspaceCreate{Name: "Lab", Slug: "lab"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.SetBudget(ctx, ws.ID, "daily", 20, nil); err != nil {
		t.Fatal(err)
	}
	ten := 10.0
	alpha, err := api.CreateKey(ctx, client.KeyCreate{Name: "alpha", Workspace: ws.ID, Limit: &ten, LimitReset: "daily"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := api.CreateKey(ctx, client.KeyCreate{Name: "=1+1"})
	if err != nil {
		t.Fatal(err)
	}
	reportSpend(t, g, alpha.Key.Hash, other.Key.Hash)
	return spendFixture{g: g, api: api, alpha: alpha.Key.Hash, other: other.Key.Hash, lab: ws.ID}
}

// reportSpend reports, with a service key: yesterday $1.25 and $0.50
// (BYOK, from hostileProvider) of alpha and $2 of other; ten days ago $4 of
// alpha; today $3 of alpha. So over the last 30 completed days
// openai/gpt-4.1 took $7.25 in 3 requests and anthropic/claude-3-haiku
// $0.50; over 7, gpt-4.1 $3.25 in 2.
func reportSpend(t *testing.T, g *gateway, alpha, other string) {
	t.Helper()
	day := time.Now().UTC().Truncate(24 * time.Hour)
	yesterday, tenDays := day.Add(-12*time.Hour), day.AddDate(0, 0, -10).Add(time.Hour)
	service := g.api(t, g.createKey(t, keys.RoleService))
	if _, err := service.ReportUsage(context.Background(), []client.UsageReport{
		{ID: "r1", KeyHash: alpha, Cost: 1.25, At: yesterday, Model: "openai/gpt-4.1", ProviderName: "OpenAI", EndpointID: "openai-1", PromptTokens: 100, CompletionTokens: 50},
		{ID: "r2", KeyHash: alpha, Cost: 0.5, BYOK: true, At: yesterday, Model: "anthropic/claude-3-haiku", ProviderName: hostileProvider, PromptTokens: 7, ReasoningTokens: 3},
		{ID: "r3", KeyHash: other, Cost: 2, At: yesterday, Model: "openai/gpt-4.1", ProviderName: "OpenAI", PromptTokens: 1000, CompletionTokens: 10},
		{ID: "r4", KeyHash: alpha, Cost: 4, At: tenDays, Model: "openai/gpt-4.1", ProviderName: "OpenAI", PromptTokens: 1, CompletionTokens: 1},
		{ID: "r5", KeyHash: alpha, Cost: 3, Model: "openai/gpt-4.1", ProviderName: "OpenAI"},
	}); err != nil {
		t.Fatal(err)
	}
}

var (
	rowRE  = regexp.MustCompile(`(?s)<tr>(.*?)</tr>`)
	cellRE = regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`)
	tagRE  = regexp.MustCompile(`<[^>]*>`)
)

// sheetRows are the rows of the table of the section id of page, each
// cell's text as a person reads it.
func sheetRows(t *testing.T, page, id string) [][]string {
	t.Helper()
	start := strings.Index(page, `<section class="sheet" id="`+id+`"`)
	if start < 0 {
		t.Fatalf("no section %s in the page", id)
	}
	section := page[start:]
	section = section[:strings.Index(section, "</section>")]
	var rows [][]string
	for _, tr := range rowRE.FindAllStringSubmatch(section, -1) {
		var row []string
		for _, td := range cellRE.FindAllStringSubmatch(tr[1], -1) {
			row = append(row, strings.TrimSpace(html.UnescapeString(tagRE.ReplaceAllString(td[1], ""))))
		}
		if row != nil { // not the heading
			rows = append(rows, row)
		}
	}
	return rows
}

func TestSpendOverviewShowsWhatTheAPIGives(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testConfig(t), true)
	f := newSpendFixture(t, g)
	b := g.browser(t)
	b.signIn(g.Management)

	p := b.get("/console/spend")
	if p.StatusCode != http.StatusOK {
		t.Fatalf("GET /console/spend = %d\n%s", p.StatusCode, p.Body)
	}
	if !strings.Contains(p.Body, `<a href="/console/spend" aria-current="page">Spend</a>`) {
		t.Error("the nav does not mark Spend as the page shown")
	}
	nbsp := "\u00a0"
	for id, want := range map[string][][]string{
		"by-model": {
			{"openai/gpt-4.1", "$7.25", "$0.00", "3", "1,101", "61", "0"},
			{"anthropic/claude-3-haiku", "$0.50", "$0.50", "1", "7", "0", "3"},
		},
		"by-workspace": {
			{"Lab", "$5.75", "$0.50", "3", "108", "51", "3"},
			{"Default", "$2.00", "$0.00", "1", "1,000", "10", "0"},
		},
		"by-key": {
			{"alpha", "", "$3.00", "", "", "$8.75"},
			{"=1+1", "", "$0.00", "", "", "$2.00"},
		},
		"standing": {
			{"Lab", "workspace budget", "daily", "$3.00", "$20.00", "15" + nbsp + "%" + " 15" + nbsp + "%"},
			{"Lab", "key alpha", "daily", "$3.00", "$10.00", "30" + nbsp + "%" + " 30" + nbsp + "%"},
		},
	} {
		got := sheetRows(t, p.Body, id)
		if len(got) != len(want) {
			t.Errorf("%s: rows %q, want %q", id, got, want)
			continue
		}
		for i := range want {
			for j, cell := range want[i] {
				if cell == "" || j >= len(got[i]) {
					continue // a label or a calendar window that depends on today
				}
				if !strings.HasPrefix(got[i][j], cell) {
					t.Errorf("%s row %d column %d: %q, want %q (row %q)", id, i, j, got[i][j], cell, got[i])
				}
			}
		}
	}
	// Each view says what it covers.
	for _, covers := range []string{"The last 30 completed UTC days", "Each key's own counters, in calendar windows"} {
		if !strings.Contains(html.UnescapeString(p.Body), covers) {
			t.Errorf("the page does not say %q", covers)
		}
	}

	// Seven days: the $4 of ten days ago is left out.
	p = b.get("/console/spend?days=7")
	if got := sheetRows(t, p.Body, "by-model"); len(got) != 2 || got[0][0] != "openai/gpt-4.1" || got[0][1] != "$3.25" || got[0][3] != "2" {
		t.Errorf("by model over 7 days: %q", got)
	}
	// Ninety: by model is the 30 days the API gives, and says so; by
	// workspace is the dollars of all 90 days, today's $3 included.
	p = b.get("/console/spend?days=90")
	if !strings.Contains(p.Body, "Not 90 days: the API gives spend by model for the last 30 completed days only.") {
		t.Error("the 90-day view does not say that by model covers 30 days")
	}
	if got := sheetRows(t, p.Body, "by-workspace"); len(got) != 2 || got[0][0] != "Lab" || got[0][1] != "$8.75" || len(got[0]) != 3 {
		t.Errorf("by workspace over 90 days: %q", got)
	}
	if got := b.get("/console/spend?days=12"); got.StatusCode != http.StatusBadRequest || !strings.Contains(got.Body, "7, 30 or 90 days") {
		t.Errorf("days=12: %d", got.StatusCode)
	}

	// A key's activity, from the keys page: its rows per day and model.
	if keysPage := b.get("/console/keys"); !strings.Contains(keysPage.Body, `href="/console/keys/`+f.alpha+`/activity"`) {
		t.Error("the keys page has no link to alpha's activity")
	}
	p = b.get("/console/keys/" + f.alpha + "/activity")
	if p.StatusCode != http.StatusOK {
		t.Fatalf("activity = %d\n%s", p.StatusCode, p.Body)
	}
	rows := sheetRows(t, p.Body, "activity")
	if len(rows) != 3 || rows[0][1] != "openai/gpt-4.1" || rows[0][4] != "$1.25" || rows[1][2] != hostileProvider || rows[2][4] != "$4.00" {
		t.Errorf("alpha's activity: %q", rows)
	}
	if strings.Contains(p.Body, "<b>x</b>") {
		t.Error("a provider's name is markup in the page")
	}
	if got := b.get("/console/keys/00000000000000ff/activity"); got.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown key's activity = %d, want 404", got.StatusCode)
	}
}

// The CSV of a table is its rows as the page shows them, numbers bare,
// and a cell a spreadsheet would run as a formula defused.
func TestSpendCSV(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testConfig(t), true)
	f := newSpendFixture(t, g)
	b := g.browser(t)
	b.signIn(g.Management)
	today := time.Now().UTC().Format(time.DateOnly)

	read := func(path, filename string) [][]string {
		t.Helper()
		p := b.get(path)
		if p.StatusCode != http.StatusOK || p.Header.Get("Content-Type") != "text/csv; charset=utf-8" {
			t.Fatalf("GET %s = %d %s\n%s", path, p.StatusCode, p.Header.Get("Content-Type"), p.Body)
		}
		if got, want := p.Header.Get("Content-Disposition"), `attachment; filename=`+filename; got != want {
			t.Errorf("GET %s: Content-Disposition %q, want %q", path, got, want)
		}
		recs, err := csv.NewReader(strings.NewReader(p.Body)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		return recs
	}
	model := read("/console/spend.csv?days=30&table=by-model", "spend-by-model-30d-"+today+".csv")
	if want := [][]string{
		{"model", "spend_usd", "byok_usd", "requests", "prompt_tokens", "completion_tokens", "reasoning_tokens"},
		{"openai/gpt-4.1", "7.25", "0", "3", "1101", "61", "0"},
		{"anthropic/claude-3-haiku", "0.5", "0.5", "1", "7", "0", "3"},
	}; !slices.EqualFunc(model, want, slices.Equal) {
		t.Errorf("by model: %q, want %q", model, want)
	}
	byKey := read("/console/spend.csv?days=7&table=by-key", "spend-by-key-7d-"+today+".csv")
	if len(byKey) != 3 || byKey[2][0] != "'=1+1" || byKey[1][0] != "alpha" || byKey[1][5] != "8.75" {
		t.Errorf("by key: %q (the key named =1+1 must read '=1+1)", byKey)
	}
	activity := read("/console/keys/"+f.alpha+"/activity.csv", "key-"+f.alpha+"-activity-"+today+".csv")
	if len(activity) != 4 || activity[2][2] != "'"+hostileProvider || activity[1][4] != "1.25" {
		t.Errorf("activity: %q", activity)
	}
	standing := read("/console/spend.csv?table=standing", "spend-standing-30d-"+today+".csv")
	if len(standing) != 3 || !slices.Equal(standing[1], []string{"Lab", "workspace budget", "daily", "3", "20", "15"}) {
		t.Errorf("standing: %q", standing)
	}
	if got := b.get("/console/spend.csv?table=secrets"); got.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown table = %d, want 404", got.StatusCode)
	}
}

// withActivity answers GET /api/v1/activity with rows instead of api.
func withActivity(api http.Handler, body string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/activity" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(body))
			return
		}
		api.ServeHTTP(w, r)
	})
}

// A model named with markup (no such id passes the API's check today, but
// the page must not depend on it) is text on the page and in the CSV.
func TestSpendShowsAModelNamedWithMarkupAsText(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testConfig(t), true)
	yesterday := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)
	api := withActivity(g.app.Handler(), `{"data":[{"date":"`+yesterday+`","model":"<script>alert(1)</script>/@x","usage":1.5,"requests":2}]}`)
	c, err := console.New(console.Options{API: api, SessionKey: []byte("a session key of thirty-two byte")})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	defer srv.Close()
	b := newVisitor(t, srv.URL)
	b.signIn(g.Management)
	p := b.get("/console/spend")
	if strings.Contains(p.Body, "<script>alert") || !strings.Contains(p.Body, "&lt;script&gt;alert(1)&lt;/script&gt;/@x") {
		t.Errorf("the model's name is not escaped in the page")
	}
	p = b.get("/console/spend.csv?table=by-model")
	if recs, err := csv.NewReader(strings.NewReader(p.Body)).ReadAll(); err != nil || len(recs) != 2 || recs[1][0] != "<script>alert(1)</script>/@x" || recs[1][1] != "1.5" {
		t.Errorf("by model CSV: %q, %v", recs, err)
	}
}

// The overview's calls of the API do not grow with the keys or the days:
// one for the days, one for the activity, one per workspace.
func TestSpendOverviewCallsTheAPIABoundedNumberOfTimes(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testConfig(t), true)
	f := newSpendFixture(t, g)
	var calls atomic.Int32
	api := g.app.Handler()
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		api.ServeHTTP(w, r)
	})
	c, err := console.New(console.Options{API: counted, SessionKey: []byte("a session key of thirty-two byte")})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	defer srv.Close()
	b := newVisitor(t, srv.URL)
	b.signIn(g.Management)
	b.get("/console/files") // takes the sign-in's carried check, so every count below asks GET /key
	count := func(path string) int32 {
		t.Helper()
		calls.Store(0)
		if p := b.get(path); p.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d", path, p.StatusCode)
		}
		return calls.Load()
	}
	// GET /key, /usage/daily, /activity, /workspaces, /keys, and the
	// budgets of each of the 2 workspaces.
	if n := count("/console/spend?days=30"); n != 7 {
		t.Errorf("the 30-day overview called the API %d times, want 7", n)
	}
	for i := range 5 {
		if _, err := f.api.CreateKey(context.Background(), client.KeyCreate{Name: "more " + string(rune('a'+i))}); err != nil {
			t.Fatal(err)
		}
	}
	if n := count("/console/spend?days=30"); n != 7 {
		t.Errorf("with 5 more keys the overview called the API %d times, want 7 still", n)
	}
	// 90 days: also the daily spend of each workspace.
	if n := count("/console/spend?days=90"); n != 9 {
		t.Errorf("the 90-day overview called the API %d times, want 9", n)
	}
	if n := count("/console/spend.csv?table=by-model"); n != 2 {
		t.Errorf("the CSV by model called the API %d times, want 2 (the key, the activity)", n)
	}
}

// A standard key sees its own spend per day, has no Spend in its nav,
// and is refused the rest in words.
func TestSpendForAStandardKey(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testConfig(t), true)
	std := g.createKey(t, keys.RoleStandard)
	b := g.browser(t)
	b.signIn(std)
	p := b.get("/console/spend?days=7")
	if p.StatusCode != http.StatusOK || !strings.Contains(p.Body, "Spend per day of this key, last 7 days") || strings.Contains(p.Body, `id="by-model"`) {
		t.Errorf("a standard key's spend page = %d\n%s", p.StatusCode, p.Body)
	}
	if strings.Contains(b.get("/console/files").Body, `href="/console/spend"`) {
		t.Error("a standard key's nav offers Spend")
	}
	if d := b.get("/console/spend.csv?days=7&table=daily"); d.StatusCode != http.StatusOK || len(strings.Split(strings.TrimSpace(d.Body), "\n")) != 8 {
		t.Errorf("a standard key's CSV of its days = %d\n%s", d.StatusCode, d.Body)
	}
	for _, path := range []string{"/console/spend.csv?table=by-model", "/console/keys/00000000000000ff/activity"} {
		got := b.get(path)
		if got.StatusCode != http.StatusForbidden || !strings.Contains(got.Body, "management key") {
			t.Errorf("a standard key's GET %s = %d\n%s", path, got.StatusCode, got.Body)
		}
	}
}
