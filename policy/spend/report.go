package spend

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aigateway/gateway/catalog"
	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/internal/money"
	"github.com/aigateway/gateway/policy/keys"
)

// Limits of a batch of reports.
const (
	MaxBatch      = 1000
	MaxReportAge  = 35 * 24 * time.Hour
	maxReportID   = 128
	maxClockAhead = time.Minute // components' clocks may run a little ahead of this one's
	// MaxCost bounds one report: a million dollars, far above any billed
	// request, and low enough that no plausible history of reports carries
	// a key's sums past what they can hold.
	MaxCost = money.Micros(1_000_000 * 1_000_000)
	// MaxTokens bounds one report's count of each kind of token: far above
	// any context window, and low enough that no plausible history carries
	// a sum past what it holds.
	MaxTokens      = 1_000_000_000_000
	maxModelLen    = 200
	maxProviderLen = 100
	maxEndpointLen = 100
)

// Report is one billed request's cost, as a component reports it, and
// what was served: the model, who served it and its tokens ("" and 0 when
// not reported).
type Report struct {
	ID    string
	KeyID string
	Cost  money.Micros
	BYOK  bool
	At    time.Time
	// AtGiven says the report carried its time: one without it was served
	// when it arrived, so a replay of it arrives at another time and only
	// a replay that carries a time is compared on it.
	AtGiven bool

	Model, Provider, Endpoint                       string
	PromptTokens, CompletionTokens, ReasoningTokens int64
}

// Served reports whether r says anything of what was served.
func (r *Report) Served() bool {
	return r.Model != "" || r.Provider != "" || r.Endpoint != "" || r.PromptTokens != 0 || r.CompletionTokens != 0 || r.ReasoningTokens != 0
}

// SameContent reports whether r, received again, is the report stored:
// a byte-identical replay, a duplicate. Anything else under its id is a
// reporter's bug (ReplayConflictError).
func (r *Report) SameContent(stored *Report) bool {
	return r.KeyID == stored.KeyID && r.Cost == stored.Cost && r.BYOK == stored.BYOK &&
		(!r.AtGiven || r.At.Equal(stored.At)) &&
		r.Model == stored.Model && r.Provider == stored.Provider && r.Endpoint == stored.Endpoint &&
		r.PromptTokens == stored.PromptTokens && r.CompletionTokens == stored.CompletionTokens &&
		r.ReasoningTokens == stored.ReasoningTokens
}

// IDRule is what a report's id must be (also the problem of an id that is
// not a string at all).
const IDRule = "must be 1 to 128 printable ASCII characters"

// A ReportForm gathers one report as the edge decodes it: the edge hands
// over each field in the client's order, as a typed value, or the problem
// it found with a field as sent (a value not of the field's JSON type, a
// field the report does not have). The form judges each value as it
// arrives and keeps the first problem met, so a report with several names
// the one a reader going through it in order meets first; a refused batch
// names one problem, with the index of its report.
//
// A ReportForm is made by the Service (ReportOne, or BatchForm.Next for a
// report of a batch) and is valid until the function reading into it
// returns.
type ReportForm struct {
	r     Report
	now   time.Time
	index int // in its batch; -1 for a report alone
	have  uint8
	// The first problem met: its field (bare) and what is wrong. A
	// problem of the report's document (doc) replaces it.
	field, problem string
	failed, doc    bool
}

// Fields a report must have.
const (
	haveID = 1 << iota
	haveKey
	haveCost
)

// ID is the report's id: 1 to 128 printable ASCII characters, unique in
// its batch and among the user's reports (a repeat is a duplicate, counted
// once).
func (f *ReportForm) ID(id string) {
	f.have |= haveID
	f.r.ID = id
	if id == "" || len(id) > maxReportID || strings.ContainsFunc(id, notPrintable) {
		f.fail("id", IDRule)
	}
}

// Key is the hash of the key a report of a batch bills (a report alone
// bills the key of its route).
func (f *ReportForm) Key(hash string) {
	f.have |= haveKey
	f.r.KeyID = hash
	if _, ok := keys.ParseID(hash); !ok {
		f.fail("key", "must be a key hash (16 hexadecimal characters)")
	}
}

// Cost is what the request cost: 0 to MaxCost.
func (f *ReportForm) Cost(c money.Micros) {
	f.have |= haveCost
	f.r.Cost = c
	switch {
	case c < 0:
		f.fail("cost", "must be 0 or more")
	case c > MaxCost:
		f.fail("cost", "must be at most 1000000")
	}
}

// BYOK says the request was served with a provider key of the workspace's
// own.
func (f *ReportForm) BYOK(byok bool) { f.r.BYOK = byok }

// At is when the request was served: at most a minute ahead of now (the
// components' clocks) and at most MaxReportAge old. A report without it was
// served now.
func (f *ReportForm) At(t time.Time) {
	switch {
	case t.After(f.now.Add(maxClockAhead)):
		f.fail("at", "must not be in the future")
	case t.Before(f.now.Add(-MaxReportAge)):
		f.fail("at", "must be at most 35 days old")
	}
	f.r.At, f.r.AtGiven = t.UTC(), true
}

// Model is the id of the model served: a well-formed author/slug (known
// to the catalog or not) of at most 200 characters.
func (f *ReportForm) Model(id string) {
	f.r.Model = id
	if _, ok := catalog.ParseID(id); !ok || len(id) > maxModelLen {
		f.fail("model", "must be a model id (author/slug) of at most 200 characters")
	}
}

// Provider is the name of who served the request, at most 100 printable
// characters.
func (f *ReportForm) Provider(name string) {
	f.r.Provider = name
	if problem := checkName(name, maxProviderLen); problem != "" {
		f.fail("provider_name", problem)
	}
}

// Endpoint is the id of the provider endpoint that served the request, as
// the catalog's endpoints name it: at most 100 printable characters.
func (f *ReportForm) Endpoint(id string) {
	f.r.Endpoint = id
	if problem := checkName(id, maxEndpointLen); problem != "" {
		f.fail("endpoint_id", problem)
	}
}

// Tokens is the count of one kind of token (TokenKind) of the request:
// a whole number from 0 to MaxTokens.
func (f *ReportForm) Tokens(kind TokenKind, n int64) {
	switch kind {
	case PromptTokens:
		f.r.PromptTokens = n
	case CompletionTokens:
		f.r.CompletionTokens = n
	case ReasoningTokens:
		f.r.ReasoningTokens = n
	}
	if n < 0 || n > MaxTokens {
		f.fail(string(kind), TokensRule)
	}
}

// TokenKind names a report's count of tokens as its field does.
type TokenKind string

// The kinds of tokens a report counts.
const (
	PromptTokens     TokenKind = "prompt_tokens"
	CompletionTokens TokenKind = "completion_tokens"
	ReasoningTokens  TokenKind = "reasoning_tokens"
)

// TokensRule is what a count of tokens must be (also the problem of one
// that is not a whole number at all).
const TokensRule = "must be a whole number from 0 to 1000000000000"

// checkName is what is wrong with a provider's or an endpoint's name, or
// "": printable UTF-8 (spaces allowed, no control characters) of at most
// max characters.
func checkName(s string, max int) string {
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > max || strings.ContainsFunc(s, unicode.IsControl) {
		return fmt.Sprintf("must be at most %d characters, without control characters", max)
	}
	return ""
}

// Refuse records a problem the edge found with field as the client sent
// it; the first problem met is the one named.
func (f *ReportForm) Refuse(field, problem string) { f.fail(field, problem) }

// Malformed refuses the report for a problem of its document: field is a
// key given twice, or "" for the report itself (not a JSON object, not
// JSON). It is named whatever else was met, since what was read of the
// document cannot be trusted.
func (f *ReportForm) Malformed(field, problem string) {
	if field == "" {
		field = "body"
	}
	f.field, f.problem, f.failed, f.doc = field, problem, true, true
}

func (f *ReportForm) fail(field, problem string) {
	if !f.failed {
		f.field, f.problem, f.failed = field, problem, true
	}
}

// report is the report read, or the problem that refuses it.
func (f *ReportForm) report() (Report, error) {
	if f.failed {
		field := f.field
		if f.doc && field == "body" && f.index >= 0 {
			field = "" // the report itself: reports[3]
		}
		return f.r, invalid.One(reportField(f.index, field), f.problem)
	}
	for _, req := range []struct {
		have  uint8
		field string
	}{{haveID, "id"}, {haveKey, "key"}, {haveCost, "cost"}} {
		if f.have&req.have == 0 && (req.have != haveKey || f.index >= 0) {
			return f.r, invalid.One(reportField(f.index, req.field), "required")
		}
	}
	if f.r.At.IsZero() {
		f.r.At = f.now.UTC()
	}
	return f.r, nil
}

// reportField names a field of the report at index i of a batch, or of
// the one report (i < 0); "" names the report itself.
func reportField(i int, field string) string {
	if i < 0 {
		return field
	}
	if field == "" {
		return fmt.Sprintf("reports[%d]", i)
	}
	return fmt.Sprintf("reports[%d].%s", i, field)
}

func notPrintable(r rune) bool { return r < 0x21 || r > 0x7e }

// A BatchForm gathers a batch of reports (the body of POST /usage) as the
// edge decodes it, report by report in the client's order: 1 to MaxBatch
// of them, each as a ReportForm judges it, ids unique within the batch;
// all or nothing. The first problem met is the one named, except that a
// repeated id before the report at fault is named first, as a reader going
// through the batch in order would meet it.
//
// A BatchForm is made by ReportBatch and is valid until the function
// reading into it returns. It keeps no reference to what the edge decoded
// from (the strings it is handed are its own).
type BatchForm struct {
	now     time.Time
	reports []Report
	form    ReportForm
	open    bool  // form holds a report being read
	fault   error // the report at fault, or a batch too large
	refused error // a problem of the batch's document
}

// Next finishes the report read before and returns the form of the next
// one, or nil once a report was refused or the batch holds MaxBatch
// reports: the edge reads no further then.
func (b *BatchForm) Next() *ReportForm {
	if b.close(); b.fault != nil || b.refused != nil {
		return nil
	}
	if len(b.reports) == MaxBatch {
		b.fault = batchSizeError()
		return nil
	}
	b.form = ReportForm{now: b.now, index: len(b.reports)}
	b.open = true
	return &b.form
}

// Refuse refuses the batch for a problem of its document or of the object
// around the reports (not one JSON object, a key given twice, an unknown
// field, no reports, reports not an array): named as given, before any
// report's.
func (b *BatchForm) Refuse(field, problem string) {
	if b.refused == nil {
		b.refused = invalid.One(field, problem)
	}
}

// close finishes the report being read, if any.
func (b *BatchForm) close() {
	if !b.open {
		return
	}
	b.open = false
	r, err := b.form.report()
	if err != nil {
		b.fault = err
		return
	}
	b.reports = append(b.reports, r)
}

// batch is the batch read, or the problem that refuses it.
func (b *BatchForm) batch() ([]Report, error) {
	if b.refused != nil {
		return nil, b.refused
	}
	b.close()
	if len(b.reports) == 0 && b.fault == nil {
		b.fault = batchSizeError()
	}
	if i, j, ok := firstRepeat(b.reports); ok {
		return nil, invalid.One(reportField(i, "id"), fmt.Sprintf("repeats the id of reports[%d]", j))
	}
	if b.fault != nil {
		return nil, b.fault
	}
	return b.reports, nil
}

func batchSizeError() error {
	return invalid.One("reports", fmt.Sprintf("must hold 1 to %d reports", MaxBatch))
}

// firstRepeat finds the first report of rs, in order, whose id an earlier
// one has: its index i and the earlier one's j. Sorting the indices by id
// finds it without a map of every id.
func firstRepeat(rs []Report) (i, j int, ok bool) {
	idx := make([]int32, len(rs))
	for k := range idx {
		idx[k] = int32(k)
	}
	slices.SortFunc(idx, func(a, b int32) int {
		return cmp.Or(strings.Compare(rs[a].ID, rs[b].ID), cmp.Compare(a, b))
	})
	for k := 1; k < len(idx); k++ {
		// Within a run of one id, the run's first is the earliest report
		// and its second the first repeat.
		if rs[idx[k]].ID == rs[idx[k-1]].ID && (k < 2 || rs[idx[k-2]].ID != rs[idx[k]].ID) {
			if !ok || int(idx[k]) < i {
				i, j, ok = int(idx[k]), int(idx[k-1]), true
			}
		}
	}
	return i, j, ok
}
