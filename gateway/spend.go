package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/internal/jsonobj"
	"github.com/aigateway/gateway/internal/money"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/spend"
)

// SpendService is what the usage and budget routes need.
type SpendService interface {
	// ReportBatch and ReportOne run read, which decodes the body into the
	// form they give it, where they record reports (on threads of lowered
	// priority: decoding a batch is most of the work).
	ReportBatch(ctx context.Context, caller *keys.APIKey, read func(*spend.BatchForm)) (spend.Result, error)
	ReportOne(ctx context.Context, caller *keys.APIKey, keyID string, read func(*spend.ReportForm)) (spend.Result, error)
	KeyUsage(ctx context.Context, ids []string) (map[string]spend.Usage, error)
	DailyUsage(ctx context.Context, caller *keys.APIKey, q spend.DailyQuery, lookup spend.WorkspaceLookup) ([]spend.DayUsage, error)
	// Activity is what a user's keys spent on (GET /activity).
	Activity(ctx context.Context, caller *keys.APIKey, q spend.ActivityQuery, lookup spend.WorkspaceLookup) ([]spend.ActivityRow, error)
	Budgets(ctx context.Context, workspaceID string) (spend.BudgetView, error)
	Budget(ctx context.Context, workspaceID string, iv spend.Interval) (spend.Budget, bool, error)
	PutBudget(ctx context.Context, workspaceID string, iv spend.Interval, req spend.BudgetRequest) (spend.Budget, bool, bool, error)
	DeleteBudget(ctx context.Context, workspaceID string, iv spend.Interval) error
}

// SpendGuard decides, from replica-local state, whether a key may be
// served (nil) or is refused for spend (a 402 error).
type SpendGuard interface {
	Decide(k *keys.APIKey) error
}

// spendMetrics counts usage reports and refusals for spend.
type spendMetrics struct {
	reports *prometheus.CounterVec // by result: accepted, duplicate, refused
	refused *prometheus.CounterVec // 402s by reason: key_limit, workspace_budget
}

func newSpendMetrics(reg prometheus.Registerer) *spendMetrics {
	m := &spendMetrics{
		reports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_usage_reports_total",
			Help: "Usage reports by result: accepted (counted), duplicate (counted before), refused (in a refused batch).",
		}, []string{"result"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_spend_refusals_total",
			Help: "Requests refused with 402, by reason: key_limit, workspace_budget.",
		}, []string{"reason"}),
	}
	reg.MustRegister(m.reports, m.refused)
	return m
}

// maxUsageBody caps a batch of usage reports: 1,000 reports with ids of the
// longest allowed, with room for whitespace.
const maxUsageBody = 512 << 10

var usageBodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (a *API) reportUsage(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	if _, err := checkJSONRequest(r); err != nil {
		return err
	}
	// Batches arrive many times a second from each component, up to half
	// a megabyte each: their bodies are read into recycled buffers, since
	// nothing parsed out of one refers to it.
	buf := usageBodies.Get().(*bytes.Buffer)
	defer usageBodies.Put(buf)
	buf.Reset()
	if _, err := buf.ReadFrom(newBodyReader(w, r, maxUsageBody)); err != nil {
		return err
	}
	body := buf.Bytes()
	res, err := a.spend.ReportBatch(r.Context(), caller, func(b *spend.BatchForm) { readBatch(body, b) })
	if err != nil {
		return a.usageError(w, err)
	}
	a.countReports(res)
	writeJSON(w, http.StatusOK, struct {
		Data usageAnswer `json:"data"`
	}{usageAnswer{res.Accepted, res.Duplicates}})
	return nil
}

type usageAnswer struct {
	Accepted   int `json:"accepted"`
	Duplicates int `json:"duplicates"`
}

func (a *API) reportKeyUsage(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	id, err := pathSegment(r, "hash")
	if err != nil {
		return err
	}
	body, _, err := readJSONBody(w, r, maxJSONBody)
	if err != nil {
		return err
	}
	res, err := a.spend.ReportOne(r.Context(), caller, id, func(f *spend.ReportForm) { readReport(body, f, false, "") })
	if err != nil {
		return a.usageError(w, err)
	}
	a.countReports(res)
	k, err := a.keys.Get(r.Context(), caller.UserID, id)
	if err != nil {
		return err
	}
	v, err := a.viewKeyWithUsage(r.Context(), &k)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, keyData{v})
	return nil
}

func (a *API) countReports(res spend.Result) {
	a.spendMetrics.reports.WithLabelValues("accepted").Add(float64(res.Accepted))
	a.spendMetrics.reports.WithLabelValues("duplicate").Add(float64(res.Duplicates))
}

// usageError counts a refused batch and names the report at fault. A
// replay of a counted id with other content is answered here, 409 naming
// the id: the error table has no row for it.
func (a *API) usageError(w http.ResponseWriter, err error) error {
	var rc *spend.ReplayConflictError
	if errors.As(err, &rc) {
		a.spendMetrics.reports.WithLabelValues("refused").Inc()
		writeReplayConflict(w, rc)
		return nil
	}
	if invalid.Fields(err) != nil {
		a.spendMetrics.reports.WithLabelValues("refused").Inc()
	}
	return err
}

// writeReplayConflict answers a replayed id with other content: 409 in the
// error envelope, the id in the message and, with the report's index in
// its batch, in the metadata.
func writeReplayConflict(w http.ResponseWriter, rc *spend.ReplayConflictError) {
	meta := map[string]any{"id": rc.ID}
	if rc.Index >= 0 {
		meta["index"] = rc.Index
	}
	writeJSON(w, http.StatusConflict, envelope{Error: envelopeError{
		Code:     http.StatusConflict,
		Message:  "Report " + strconv.Quote(rc.ID) + " was already counted with other content; nothing of the request was counted",
		Metadata: meta,
	}})
}

// readBatch decodes the body of POST /usage into b: {"reports": [Report…]}
// and nothing else, each report an object of id, key, cost and the
// optional byok, at and what was served (model, provider_name,
// endpoint_id and the three counts of tokens). Problems of the body's form are handed to the form
// where they are met; the domain names the first.
func readBatch(body []byte, b *spend.BatchForm) {
	var (
		reports json.RawMessage
		unknown *string // the first member that is not reports
	)
	if doc := walkObject(body, func(key string, v json.RawMessage) {
		if key != "reports" {
			if unknown == nil {
				unknown = &key
			}
			return
		}
		reports = v
	}); doc != nil {
		b.Refuse(doc.Name, doc.Problem)
		return
	}
	switch {
	case unknown != nil:
		b.Refuse(*unknown, "unknown field")
		return
	case reports == nil:
		b.Refuse("reports", "required")
		return
	}
	var lastKey string // a batch names few keys: consecutive reports share one string
	err := jsonobj.Elements(reports, func(_ int, item json.RawMessage) bool {
		f := b.Next()
		if f == nil {
			return false
		}
		lastKey = readReport(item, f, true, lastKey)
		return true
	})
	if err != nil {
		b.Refuse("reports", "must be an array")
	}
}

// readReport decodes one report into f: an element of a batch (inBatch,
// a value of a document already checked whole, with its key), or the body
// of POST /keys/{hash}/usage (whose key is the route's). lastKey is the key
// of the report before in the batch: the same key again is handed over as
// that string rather than a new one. It returns the report's key.
func readReport(body []byte, f *spend.ReportForm, inBatch bool, lastKey string) string {
	key := lastKey
	field := func(name string, v json.RawMessage) {
		switch {
		case name == "id":
			s, ok := jsonobj.String(v)
			if !ok {
				f.Refuse(name, spend.IDRule)
				return
			}
			f.ID(s)
		case name == "key" && inBatch:
			if lastKey != "" && len(v) == len(lastKey)+2 && v[0] == '"' && string(v[1:len(v)-1]) == lastKey {
				f.Key(lastKey)
				return
			}
			s, ok := jsonobj.String(v)
			if !ok {
				f.Refuse(name, "must be a key hash")
				return
			}
			key = s
			f.Key(s)
		case name == "cost":
			n, ok := jsonobj.Number(v)
			if !ok {
				f.Refuse(name, "must be a number")
				return
			}
			m, problem := readMoney(n)
			if problem != "" {
				f.Refuse(name, problem)
				return
			}
			f.Cost(m)
		case name == "byok":
			b, ok := jsonobj.Bool(v)
			if !ok {
				f.Refuse(name, "must be true or false")
				return
			}
			f.BYOK(b)
		case name == "model" || name == "provider_name" || name == "endpoint_id":
			readReportName(f, name, v)
		case name == string(spend.PromptTokens) || name == string(spend.CompletionTokens) || name == string(spend.ReasoningTokens):
			readTokens(f, spend.TokenKind(name), v)
		case name == "at":
			if jsonobj.IsNull(v) {
				return
			}
			s, ok := jsonobj.String(v)
			t, parsed := readTime(s)
			if !ok || !parsed {
				f.Refuse(name, "must be an ISO 8601 UTC time")
				return
			}
			f.At(t)
		default:
			f.Refuse(name, "unknown field")
		}
	}
	// An element of a batch was checked with the whole document; a report
	// alone is the document. (Called directly, not through a function
	// value, so that field stays on the stack.)
	var err error
	if inBatch {
		err = jsonobj.Members(body, field)
	} else {
		err = jsonobj.Walk(body, field)
	}
	if doc := documentProblem(err); doc != nil {
		f.Malformed(doc.Name, doc.Problem)
	}
	return key
}

// readReportName hands a report's model, provider_name or endpoint_id to
// f: a string, or null for none.
func readReportName(f *spend.ReportForm, name string, v json.RawMessage) {
	if jsonobj.IsNull(v) {
		return
	}
	s, ok := jsonobj.String(v)
	if !ok {
		f.Refuse(name, "must be a string")
		return
	}
	switch name {
	case "model":
		f.Model(s)
	case "provider_name":
		f.Provider(s)
	default:
		f.Endpoint(s)
	}
}

// readTokens hands a report's count of tokens to f: a whole number
// written without fraction or exponent, or null for none.
func readTokens(f *spend.ReportForm, kind spend.TokenKind, v json.RawMessage) {
	if jsonobj.IsNull(v) {
		return
	}
	lit, ok := jsonobj.Number(v)
	if !ok {
		f.Refuse(string(kind), spend.TokensRule)
		return
	}
	n, err := strconv.ParseInt(lit, 10, 64)
	if err != nil {
		f.Refuse(string(kind), spend.TokensRule)
		return
	}
	f.Tokens(kind, n)
}

// readBudget decodes the body of PUT /workspaces/{id}/budgets/{interval}:
// {"limit_usd", "include_byok_in_budgets"}. A refused budget names the
// first problem met, the domain's rule of the limit applied where the
// limit is read; the document's own problem comes before any.
func readBudget(body []byte) (spend.BudgetRequest, error) {
	var (
		req   spend.BudgetRequest
		first firstProblem
	)
	doc := walkObject(body, func(key string, v json.RawMessage) {
		switch key {
		case "limit_usd":
			zero := money.Micros(0)
			req.Limit = &zero // given, whatever it holds: not "required"
			n, ok := unmarshalNumber(v)
			if !ok {
				first.add(key, "must be a number")
				return
			}
			m, problem := readMoney(n)
			if problem != "" {
				first.add(key, problem)
				return
			}
			*req.Limit = m
			first.addErr(spend.CheckBudgetLimit(m))
		case "include_byok_in_budgets":
			b, ok := jsonobj.Bool(v)
			if !ok {
				first.add(key, "must be true or false")
			}
			req.IncludeBYOK = &b
		default:
			first.add(key, "unknown field")
		}
	})
	if doc != nil {
		return req, invalid.One(doc.Name, doc.Problem)
	}
	return req, first.err()
}

// dailyUsage answers GET /usage/daily: the caller's usage per UTC day, of
// one key, one workspace or all of its user's keys, as spend.ResolveScope
// allows.
func (a *API) dailyUsage(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	q, err := parseDailyQuery(r.URL.Query())
	if err != nil {
		return err
	}
	days, err := a.spend.DailyUsage(r.Context(), caller, q, a.workspaceID)
	if err != nil {
		return err
	}
	out := make([]dayView, len(days))
	for i, d := range days {
		out[i] = dayView{Date: d.Date.Format(time.DateOnly), Usage: d.Cost, BYOKUsage: d.BYOK}
	}
	writeJSON(w, http.StatusOK, struct {
		Data []dayView `json:"data"`
	}{out})
	return nil
}

// dayView is one day of GET /usage/daily: amounts encoded as the Key
// resource's usage fields are, exact to the millionth.
type dayView struct {
	Date      string       `json:"date"`
	Usage     money.Micros `json:"usage"`
	BYOKUsage money.Micros `json:"byok_usage"`
}

// parseDailyQuery reads days, workspace_id and key.
func parseDailyQuery(query url.Values) (spend.DailyQuery, error) {
	q := spend.DailyQuery{Days: spend.DefaultHistoryDays}
	err := readQuery(query, refuseUnknown, map[string]paramReader{
		"days":         intParam(&q.Days, 1, spend.MaxHistoryDays),
		"workspace_id": workspaceParam(&q.Workspace),
		"key": func(v string) string {
			if v == "" || len(v) > 64 {
				return "must be a key hash"
			}
			q.KeyID = v
			return ""
		},
	})
	return q, err
}

// workspaceID resolves a workspace id or slug of userID (spend.WorkspaceLookup).
func (a *API) workspaceID(ctx context.Context, userID, ref string) (string, error) {
	ws, err := a.workspaces.Get(ctx, userID, ref)
	return ws.ID, err
}

// viewKeyWithUsage is the Key resource with its usage sums.
func (a *API) viewKeyWithUsage(ctx context.Context, k *keys.APIKey) (keyView, error) {
	views, err := a.viewKeysWithUsage(ctx, []keys.APIKey{*k})
	if err != nil {
		return keyView{}, err
	}
	return views[0], nil
}

func (a *API) viewKeysWithUsage(ctx context.Context, ks []keys.APIKey) ([]keyView, error) {
	views := make([]keyView, len(ks))
	var usage map[string]spend.Usage
	if len(ks) > 0 {
		ids := make([]string, len(ks))
		for i := range ks {
			ids[i] = ks[i].ID
		}
		var err error
		if usage, err = a.spend.KeyUsage(ctx, ids); err != nil {
			return nil, err
		}
	}
	for i := range ks {
		u := usage[ks[i].ID]
		v := viewKey(&ks[i])
		v.Usage, v.UsageDaily, v.UsageWeekly, v.UsageMonthly = u.Total, u.Daily, u.Weekly, u.Monthly
		v.BYOKUsage, v.BYOKUsageDaily, v.BYOKUsageWeekly, v.BYOKUsageMonthly = u.BYOKTotal, u.BYOKDaily, u.BYOKWeekly, u.BYOKMonthly
		v.LimitRemaining = spend.Remaining(&ks[i], u)
		views[i] = v
	}
	return views, nil
}

// generatedServiceSDK reports whether the request comes from the public
// service's generated SDKs (User-Agent "speakeasy-sdk/<lang> ..."). Their
// setBudget accepts only a 200, where the contract answers a creation with
// 201: they get 200 with the same body, everyone else the contract's 201.
func generatedServiceSDK(r *http.Request) bool {
	return strings.HasPrefix(r.Header.Get("User-Agent"), "speakeasy-sdk/")
}

// budgetView is the spec's Budget.
type budgetView struct {
	ID            string       `json:"id"`
	WorkspaceID   string       `json:"workspace_id"`
	LimitUSD      money.Micros `json:"limit_usd"`
	ResetInterval *string      `json:"reset_interval"`
	CreatedAt     time.Time    `json:"created_at"`
	UpdatedAt     time.Time    `json:"updated_at"`
}

func viewBudget(b spend.Budget) budgetView {
	v := budgetView{ID: b.ID, WorkspaceID: b.WorkspaceID, LimitUSD: b.Limit, CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt}
	if b.Interval != spend.Lifetime {
		iv := string(b.Interval)
		v.ResetInterval = &iv
	}
	return v
}

// budgetTarget resolves the workspace and interval of a budget route.
func (a *API) budgetTarget(r *http.Request, caller *keys.APIKey, withInterval bool) (string, spend.Interval, error) {
	ref, err := pathSegment(r, "id")
	if err != nil {
		return "", "", err
	}
	var iv spend.Interval
	if withInterval {
		s, err := pathSegment(r, "interval")
		if err != nil {
			return "", "", err
		}
		if iv = spend.Interval(s); !iv.Valid() {
			return "", "", badRequest(map[string]any{"interval": "must be daily, weekly, monthly or lifetime"})
		}
	}
	ws, err := a.workspaces.Get(r.Context(), caller.UserID, ref)
	if err != nil {
		return "", "", err
	}
	return ws.ID, iv, nil
}

func (a *API) listBudgets(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	ws, _, err := a.budgetTarget(r, caller, false)
	if err != nil {
		return err
	}
	v, err := a.spend.Budgets(r.Context(), ws)
	if err != nil {
		return err
	}
	out := make([]budgetView, len(v.Budgets))
	for i, b := range v.Budgets {
		out[i] = viewBudget(b)
	}
	writeJSON(w, http.StatusOK, struct {
		Data        []budgetView `json:"data"`
		IncludeBYOK bool         `json:"include_byok_in_budgets"`
	}{out, v.IncludeBYOK})
	return nil
}

type budgetData struct {
	Data        budgetView `json:"data"`
	IncludeBYOK bool       `json:"include_byok_in_budgets"`
}

func (a *API) getBudget(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	ws, iv, err := a.budgetTarget(r, caller, true)
	if err != nil {
		return err
	}
	b, byok, err := a.spend.Budget(r.Context(), ws, iv)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, budgetData{viewBudget(b), byok})
	return nil
}

func (a *API) putBudget(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	ws, iv, err := a.budgetTarget(r, caller, true)
	if err != nil {
		return err
	}
	body, _, err := readJSONBody(w, r, maxJSONBody)
	if err != nil {
		return err
	}
	req, err := readBudget(body)
	if err != nil {
		return a.usageError(w, err)
	}
	b, created, byok, err := a.spend.PutBudget(r.Context(), ws, iv, req)
	var order *spend.OrderError
	switch {
	case errors.As(err, &order):
		return badRequest(map[string]any{string(order.ConflictsWith): order.Error()})
	case err != nil:
		return a.usageError(w, err)
	}
	status := http.StatusOK
	if created && !generatedServiceSDK(r) {
		status = http.StatusCreated
	}
	a.log.Info("workspace budget set", zap.String("workspace_id", ws), zap.String("interval", string(iv)),
		zap.Stringer("limit_usd", b.Limit), zap.String("actor_key_id", caller.ID))
	writeJSON(w, status, budgetData{viewBudget(b), byok})
	return nil
}

func (a *API) deleteBudget(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	ws, iv, err := a.budgetTarget(r, caller, true)
	if err != nil {
		return err
	}
	if err := a.spend.DeleteBudget(r.Context(), ws, iv); err != nil {
		return err
	}
	a.log.Info("workspace budget deleted", zap.String("workspace_id", ws), zap.String("interval", string(iv)),
		zap.String("actor_key_id", caller.ID))
	writeJSON(w, http.StatusOK, struct {
		Deleted bool `json:"deleted"`
	}{true})
	return nil
}
