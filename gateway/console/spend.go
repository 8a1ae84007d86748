package console

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/aigateway/gateway/client"
)

// The spend overview reads only the public API, and each of its views from
// the one call that gives it whole; where no call does, the page says
// what the view covers instead of reading the stores another way:
//
//   - spend per day, all keys: GET /usage/daily, 7 to 90 days, today
//     included;
//   - by model and by workspace, with requests and tokens: one GET
//     /activity?group_by=workspace, which covers the last 30 completed UTC
//     days (so the 90-day view shows those 30 by model, and by workspace
//     the dollars of GET /usage/daily per workspace, without tokens);
//   - by key: the keys' own counters of GET /keys (today, this week, this
//     month, all time), as no call gives every key's last N days at once;
//   - the standing of budgets and limits: GET /workspaces/{id}/budgets per
//     workspace and the same keys, as the budgets page computes it.
//
// So a page costs a bounded number of calls: one for the days, one for
// the activity, one per workspace (budgets; and daily spend at 90 days),
// one per 100 keys, up to maxSpendKeys.

// spendSpans are the spans the overview offers, in days.
var spendSpans = []int{7, 30, 90}

// activityDays is what GET /activity covers: the last 30 completed UTC
// days.
const activityDays = 30

// maxSpendKeys bounds the keys the overview reads, in pages of 100.
const maxSpendKeys = 1000

type spendData struct {
	Days  int
	Spans []spanChoice
	// Own: the signed-in key is a standard key, shown its own spend only.
	Own        bool
	Daily      *sheet
	Chart      *dayChart
	ChartNote  string
	ChartScope string
	Sheets     []*sheet
	Standing   *sheet
}

// spanChoice is a link to the overview over another span.
type spanChoice struct {
	Days    int
	Href    string
	Current bool
}

// spanParam reads ?days= (7, 30 or 90; 30 when absent).
func spanParam(r *http.Request) (int, error) {
	s := r.URL.Query().Get("days")
	if s == "" {
		return 30, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || !slices.Contains(spendSpans, n) {
		return 0, &client.Error{StatusCode: http.StatusBadRequest, Message: "The span must be 7, 30 or 90 days: choose one of the links of the Spend page."}
	}
	return n, nil
}

// spendSheets are the tables of the overview, by the name of their CSV.
var spendSheets = []string{"by-model", "by-workspace", "by-key", "standing"}

func (c *Console) spend(v *visit) error {
	days, err := spanParam(v.r)
	if err != nil {
		return err
	}
	src := &spendSource{v: v, days: days}
	d := spendData{Days: days, Own: !v.me.IsManagementKey}
	for _, n := range spendSpans {
		d.Spans = append(d.Spans, spanChoice{Days: n, Href: spendURL("/console/spend", n), Current: n == days})
	}
	if d.Daily, d.Chart, d.ChartNote, err = src.daily(); err != nil {
		return err
	}
	d.ChartScope = "All keys of your user, deleted ones included"
	if d.Own {
		d.ChartScope = "This key only: spend by model, key and workspace is shown to management keys"
		return v.show("spend", "Spend", "spend", d)
	}
	for _, name := range spendSheets {
		s, err := src.sheet(name)
		if err != nil {
			return err
		}
		if name == "standing" {
			d.Standing = s
		} else {
			d.Sheets = append(d.Sheets, s)
		}
	}
	return v.show("spend", "Spend", "spend", d)
}

// spendCSV downloads one table of the overview (?table=, with its days):
// the same rows, read the same way. A standard key has only its days.
func (c *Console) spendCSV(v *visit) error {
	days, err := spanParam(v.r)
	if err != nil {
		return err
	}
	src := &spendSource{v: v, days: days}
	name := v.r.URL.Query().Get("table")
	var s *sheet
	switch {
	case name == "daily":
		if s, _, _, err = src.daily(); err != nil {
			return err
		}
	case !slices.Contains(spendSheets, name):
		return &client.Error{StatusCode: http.StatusNotFound, Message: "There is no such table: download one from the links of the Spend page."}
	case !v.me.IsManagementKey:
		return needManagement
	default:
		if s, err = src.sheet(name); err != nil {
			return err
		}
	}
	if s.refusal != nil {
		// Why there is nothing to download, rather than an empty file.
		return s.refusal
	}
	writeCSV(v.w, fmt.Sprintf("spend-%s-%dd-%s", name, days, utcToday()), s)
	return nil
}

// spendURL is path over days.
func spendURL(path string, days int, more ...string) string {
	q := url.Values{"days": {strconv.Itoa(days)}}
	for i := 0; i+1 < len(more); i += 2 {
		q.Set(more[i], more[i+1])
	}
	return withQuery(path, q)
}

func utcToday() string { return time.Now().UTC().Format(time.DateOnly) }

// spendSource reads what the overview's views need, each call once.
type spendSource struct {
	v    *visit
	days int

	activity        []client.ActivityItem
	activityRefusal *client.Error
	activityRead    bool

	workspaces []client.Workspace
	wsTotal    int
	wsRead     bool

	keys       []client.Key
	keysCapped bool
	keysRead   bool
}

// viewRefusal is the API's refusal of one view, which the rest of the page
// can do without (402: over a limit; 403; 429), or nil with err: another
// error (a 401 ends the session), which is the page's.
func viewRefusal(err error) (*client.Error, error) {
	var e *client.Error
	if errors.As(err, &e) && e.StatusCode != http.StatusUnauthorized && e.StatusCode < 500 {
		return e, nil
	}
	return nil, err
}

// refuse shows, instead of the sheet's rows, why the API gave none.
func (sh *sheet) refuse(e *client.Error) *sheet {
	sh.refusal, sh.Rows = e, nil
	sh.Empty = sh.Title + " cannot be shown. " + apiMessage(e)
	return sh
}

func (s *spendSource) sheet(name string) (*sheet, error) {
	switch name {
	case "by-model":
		return s.byModel()
	case "by-workspace":
		return s.byWorkspace()
	case "by-key":
		return s.byKey()
	default:
		return s.standing()
	}
}

// daily is the spend per day over the span: the user's (the key's own for
// a standard key), as a chart and as its table.
func (s *spendSource) daily() (*sheet, *dayChart, string, error) {
	q := client.DailyQuery{Days: s.days}
	title := fmt.Sprintf("Spend per day of all keys, last %d days (UTC)", s.days)
	if !s.v.me.IsManagementKey {
		q.KeyHash = s.v.me.Hash
		title = fmt.Sprintf("Spend per day of this key, last %d days (UTC)", s.days)
	}
	sh := &sheet{ID: "daily", Title: "Spend per day", CSV: spendURL("/console/spend.csv", s.days, "table", "daily"),
		Columns: []sheetColumn{{"Day (UTC)", "date", false}, {"Spend", "spend_usd", true}, {"With provider keys", "byok_usd", true}}}
	days, err := s.v.api.DailyUsage(s.v.ctx(), q)
	if err != nil {
		e, err := viewRefusal(err)
		if err != nil {
			return nil, nil, "", err
		}
		sh.refuse(e)
		return sh, nil, sh.Empty, nil
	}
	chart := newDayChart("spend-chart", title, days)
	for _, d := range chart.Days {
		sh.Rows = append(sh.Rows, []sheetCell{textCell(d.Date), dollarCell(d.Usage), dollarCell(d.BYOK)})
	}
	return sh, chart, "", nil
}

// readActivity reads GET /activity per workspace once.
func (s *spendSource) readActivity() error {
	if s.activityRead {
		return nil
	}
	s.activityRead = true
	rows, err := s.v.api.Activity(s.v.ctx(), client.ActivityQuery{ByWorkspace: true})
	if err != nil {
		s.activityRefusal, err = viewRefusal(err)
		return err
	}
	s.activity = rows
	return nil
}

// activitySpan is the first and last day of the activity the span shows:
// its last completed days, at most the 30 the API gives.
func (s *spendSource) activitySpan() (first, last string, days int) {
	days = min(s.days, activityDays)
	today := time.Now().UTC().Truncate(24 * time.Hour)
	return today.AddDate(0, 0, -days).Format(time.DateOnly), today.AddDate(0, 0, -1).Format(time.DateOnly), days
}

// activityCovers says which days a view of the activity covers.
func (s *spendSource) activityCovers(what string) string {
	first, last, days := s.activitySpan()
	covers := fmt.Sprintf("The last %d completed UTC days, %s to %s (today's spend is counted here from tomorrow). Includes BYOK spend.", days, first, last)
	if s.days > activityDays {
		covers = fmt.Sprintf("Not %d days: the API gives %s for the last %d completed days only. ", s.days, what, activityDays) + covers
	}
	return covers
}

// totals are what was spent on one thing over the span.
type totals struct {
	Name, Href                              string
	Usage, BYOK                             float64
	Requests, Prompt, Completion, Reasoning int64
}

func (t *totals) add(a client.ActivityItem) {
	t.Usage += a.Usage
	t.BYOK += a.BYOKUsage
	t.Requests += a.Requests
	t.Prompt += a.PromptTokens
	t.Completion += a.CompletionTokens
	t.Reasoning += a.ReasoningTokens
}

// sumActivity sums the activity of the span per the key of each row.
func (s *spendSource) sumActivity(keyOf func(client.ActivityItem) string) []*totals {
	first, _, _ := s.activitySpan()
	by := map[string]*totals{}
	for _, a := range s.activity {
		if a.Date < first {
			continue
		}
		k := keyOf(a)
		t := by[k]
		if t == nil {
			t = &totals{Name: k}
			by[k] = t
		}
		t.add(a)
	}
	out := make([]*totals, 0, len(by))
	for _, t := range by {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *totals) int {
		return cmp.Or(cmp.Compare(b.Usage, a.Usage), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// activityColumns are the columns of a view of the activity after its
// first.
var activityColumns = []sheetColumn{
	{"Spend", "spend_usd", true}, {"With provider keys", "byok_usd", true}, {"Requests", "requests", true},
	{"Prompt tokens", "prompt_tokens", true}, {"Completion tokens", "completion_tokens", true}, {"Reasoning tokens", "reasoning_tokens", true},
}

func (t *totals) cells() []sheetCell {
	return []sheetCell{{Text: t.Name, Href: t.Href}, dollarCell(t.Usage), dollarCell(t.BYOK), countCell(t.Requests),
		countCell(t.Prompt), countCell(t.Completion), countCell(t.Reasoning)}
}

func (s *spendSource) byModel() (*sheet, error) {
	sh := &sheet{ID: "by-model", Title: "By model", CSV: spendURL("/console/spend.csv", s.days, "table", "by-model"),
		Covers: s.activityCovers("spend by model"), Empty: "No spend on any model in these days.",
		Columns: append([]sheetColumn{{"Model", "model", false}}, activityColumns...)}
	if err := s.readActivity(); err != nil {
		return nil, err
	}
	if s.activityRefusal != nil {
		return sh.refuse(s.activityRefusal), nil
	}
	for _, t := range s.sumActivity(func(a client.ActivityItem) string { return cmp.Or(a.Model, "(not reported)") }) {
		sh.Rows = append(sh.Rows, t.cells())
	}
	return sh, nil
}

// readWorkspaces lists the user's workspaces (the first 100) once.
func (s *spendSource) readWorkspaces() error {
	if s.wsRead {
		return nil
	}
	s.wsRead = true
	page, err := s.v.api.ListWorkspaces(s.v.ctx(), 0, maxWorkspaceChoices)
	if err != nil {
		return err
	}
	s.workspaces, s.wsTotal = page.Workspaces, page.Total
	return nil
}

// workspaceName names the workspace id as the user does.
func (s *spendSource) workspaceName(id string) string {
	for _, w := range s.workspaces {
		if w.ID == id {
			return w.Name
		}
	}
	return id
}

// fewerWorkspaces says that only the first workspaces are shown, or "".
func (s *spendSource) fewerWorkspaces() string {
	if s.wsTotal > len(s.workspaces) {
		return fmt.Sprintf(" The first %d of your %d workspaces are shown.", len(s.workspaces), s.wsTotal)
	}
	return ""
}

func (s *spendSource) byWorkspace() (*sheet, error) {
	sh := &sheet{ID: "by-workspace", Title: "By workspace", CSV: spendURL("/console/spend.csv", s.days, "table", "by-workspace"),
		Empty: "No spend in any workspace in these days."}
	if err := s.readWorkspaces(); err != nil {
		return nil, err
	}
	if s.days > activityDays {
		return s.byWorkspaceDaily(sh)
	}
	sh.Covers = s.activityCovers("spend by workspace")
	sh.Columns = append([]sheetColumn{{"Workspace", "workspace", false}}, activityColumns...)
	if err := s.readActivity(); err != nil {
		return nil, err
	}
	if s.activityRefusal != nil {
		return sh.refuse(s.activityRefusal), nil
	}
	for _, t := range s.sumActivity(func(a client.ActivityItem) string { return deref(a.WorkspaceID) }) {
		id := t.Name
		t.Name, t.Href = s.workspaceName(id), withQuery("/console/budgets", url.Values{"workspace": {id}})
		sh.Rows = append(sh.Rows, t.cells())
	}
	return sh, nil
}

// byWorkspaceDaily is spend by workspace over more days than the activity
// covers: GET /usage/daily of each workspace, in dollars only.
func (s *spendSource) byWorkspaceDaily(sh *sheet) (*sheet, error) {
	sh.Covers = fmt.Sprintf("The last %d UTC days, today included, in dollars (GET /usage/daily of each workspace). Requests and tokens by workspace are in the 30-day view: the API counts them for the last %d completed days only. Includes BYOK spend.%s",
		s.days, activityDays, s.fewerWorkspaces())
	sh.Columns = []sheetColumn{{"Workspace", "workspace", false}, {"Spend", "spend_usd", true}, {"With provider keys", "byok_usd", true}}
	var rows []*totals
	for _, w := range s.workspaces {
		days, err := s.v.api.DailyUsage(s.v.ctx(), client.DailyQuery{Workspace: w.ID, Days: s.days})
		if err != nil {
			e, err := viewRefusal(err)
			if err != nil {
				return nil, err
			}
			return sh.refuse(e), nil
		}
		t := &totals{Name: w.Name, Href: withQuery("/console/budgets", url.Values{"workspace": {w.ID}})}
		for _, d := range days {
			t.Usage += d.Usage
			t.BYOK += d.BYOKUsage
		}
		if t.Usage > 0 {
			rows = append(rows, t)
		}
	}
	slices.SortStableFunc(rows, func(a, b *totals) int { return cmp.Compare(b.Usage, a.Usage) })
	for _, t := range rows {
		sh.Rows = append(sh.Rows, []sheetCell{{Text: t.Name, Href: t.Href}, dollarCell(t.Usage), dollarCell(t.BYOK)})
	}
	return sh, nil
}

// readKeys lists the user's keys, disabled ones included, up to
// maxSpendKeys, once.
func (s *spendSource) readKeys() error {
	if s.keysRead {
		return nil
	}
	s.keysRead = true
	for k, err := range s.v.api.Keys(s.v.ctx(), client.KeyQuery{IncludeDisabled: true}) {
		if err != nil {
			return err
		}
		if len(s.keys) == maxSpendKeys {
			s.keysCapped = true
			break
		}
		s.keys = append(s.keys, k)
	}
	return nil
}

// fewerKeys says that only the first keys are counted, or "".
func (s *spendSource) fewerKeys() string {
	if s.keysCapped {
		return fmt.Sprintf(" Only your first %d keys are read here.", maxSpendKeys)
	}
	return ""
}

func (s *spendSource) byKey() (*sheet, error) {
	sh := &sheet{ID: "by-key", Title: "By key", CSV: spendURL("/console/spend.csv", s.days, "table", "by-key"),
		Covers: "Each key's own counters, in calendar windows (UTC): today, this week from Monday, this month, and all time; " +
			"the API gives no key's last 7, 30 or 90 days without a call per key. A key's name opens its days and models. Includes BYOK spend; keys that never spent are left out." + s.fewerKeys(),
		Empty: "No key has spent anything yet.",
		Columns: []sheetColumn{{"Key", "name", false}, {"Label", "label", false}, {"Today", "today_usd", true}, {"This week", "week_usd", true},
			{"This month", "month_usd", true}, {"All time", "all_time_usd", true}}}
	if err := s.readKeys(); err != nil {
		return nil, err
	}
	keys := slices.Clone(s.keys)
	slices.SortStableFunc(keys, func(a, b client.Key) int {
		return cmp.Or(cmp.Compare(b.UsageMonthly, a.UsageMonthly), cmp.Compare(b.Usage, a.Usage))
	})
	for _, k := range keys {
		if k.Usage <= 0 {
			continue
		}
		sh.Rows = append(sh.Rows, []sheetCell{{Text: k.Name, Href: "/console/keys/" + url.PathEscape(k.Hash) + "/activity"}, textCell(k.Label),
			dollarCell(k.UsageDaily), dollarCell(k.UsageWeekly), dollarCell(k.UsageMonthly), dollarCell(k.Usage)})
	}
	return sh, nil
}

// standing is every budget and key limit against its current window, as
// the budgets page computes it, workspace by workspace.
func (s *spendSource) standing() (*sheet, error) {
	sh := &sheet{ID: "standing", Title: "Budgets and limits today", CSV: spendURL("/console/spend.csv", s.days, "table", "standing"),
		Covers: "Each budget and key limit against its current window (UTC; weeks start on Monday), counting BYOK spend where the budget or key says so. A workspace opens its budgets page." +
			s.fewerWorkspaces() + s.fewerKeys(),
		Empty: "No budgets and no key limits: set them on the Budgets and Keys pages.",
		Columns: []sheetColumn{{"Workspace", "workspace", false}, {"Budget or key", "subject", false}, {"Window", "window", false},
			{"Spent", "spent_usd", true}, {"Limit", "limit_usd", true}, {"Used", "used_percent", true}}}
	if err := s.readWorkspaces(); err != nil {
		return nil, err
	}
	if err := s.readKeys(); err != nil {
		return nil, err
	}
	byWorkspace := map[string][]client.Key{}
	for _, k := range s.keys {
		byWorkspace[k.WorkspaceID] = append(byWorkspace[k.WorkspaceID], k)
	}
	for _, w := range s.workspaces {
		budgets, includeBYOK, err := s.v.api.Budgets(s.v.ctx(), w.ID)
		if err != nil {
			e, err := viewRefusal(err)
			if err != nil {
				return nil, err
			}
			return sh.refuse(e), nil
		}
		ws := sheetCell{Text: w.Name, Href: withQuery("/console/budgets", url.Values{"workspace": {w.ID}})}
		keys := byWorkspace[w.ID]
		for _, b := range budgetBars(budgets, keys, includeBYOK) {
			sh.Rows = append(sh.Rows, standingRow(ws, textCell("workspace budget"), b.Interval, b.Spent, b.Limit))
		}
		for _, k := range keyLimitBars(keys) {
			sh.Rows = append(sh.Rows, standingRow(ws, textCell("key "+k.Name+" ("+k.Label+")"), k.Reset, k.Spent, k.Limit))
		}
	}
	return sh, nil
}

func standingRow(ws, subject sheetCell, window string, spent, limit float64) []sheetCell {
	used := 0.0
	if limit > 0 {
		used = 100 * spent / limit
	}
	pct := strconv.FormatFloat(float64(int64(used)), 'f', 0, 64)
	return []sheetCell{ws, subject, textCell(window), dollarCell(spent), dollarCell(limit),
		{Text: pct + "\u00a0%", Value: pct, Meter: &meterValue{Used: spent, Of: limit}}}
}
