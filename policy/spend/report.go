package spend

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/internal/jsonobj"
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
)

// Report is one billed request's cost, as a component reports it.
type Report struct {
	ID    string
	KeyID string
	Cost  money.Micros
	BYOK  bool
	At    time.Time
}

// ErrInvalid: a batch of reports is invalid; *InvalidError names the first
// problem by index and field.
var ErrInvalid = errors.New("invalid usage report")

// InvalidError names what is wrong with a batch: the field path, such as
// "reports[3].cost" (or "cost" for a single report), and the problem.
type InvalidError struct {
	Field, Problem string
}

func (e *InvalidError) Error() string { return "invalid usage report: " + e.Field + ": " + e.Problem }

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *InvalidError) Unwrap() error { return ErrInvalid }

// FieldProblems names the report's field at fault.
func (e *InvalidError) FieldProblems() []invalid.Field {
	return []invalid.Field{{Name: e.Field, Problem: e.Problem}}
}

// errNotString: a field that must be a JSON string is something else.
var errNotString = errors.New("not a JSON string")

// ParseBatch decodes the body of POST /usage: {"reports": [Report…]}, 1 to
// MaxBatch of them, strictly; all or nothing. A duplicate id within the
// batch is refused. now bounds "at" (35 days back, not ahead).
func ParseBatch(body []byte, now time.Time) ([]Report, error) {
	return AppendBatch(nil, body, now)
}

// AppendBatch is ParseBatch appending the reports to dst[:0], so that a
// caller can reuse one slice for batch after batch (a batch of 1,000 is
// 70 KiB, a quarter of what an ingest allocates).
func AppendBatch(dst []Report, body []byte, now time.Time) ([]Report, error) {
	var raw json.RawMessage
	var bad *InvalidError
	err := jsonobj.Walk(body, func(key string, v json.RawMessage) {
		if key != "reports" {
			if bad == nil {
				bad = &InvalidError{key, "unknown field"}
			}
			return
		}
		raw = v
	})
	if err := documentError(err); err != nil {
		return nil, err
	}
	if bad != nil {
		return nil, bad
	}
	if raw == nil {
		return nil, &InvalidError{"reports", "required"}
	}
	// Sized for the most reports raw can hold: none is shorter than
	// {"id":"x","key":"0123456789abcdef","cost":0}.
	const shortestReport = 44
	out := slices.Grow(dst[:0], min(MaxBatch, len(raw)/shortestReport+1))
	var fault error
	err = jsonobj.Elements(raw, func(i int, item json.RawMessage) bool {
		if i == MaxBatch {
			fault = batchSizeError()
			return false
		}
		var prevKey string // a batch names few keys: consecutive reports share one string
		if len(out) > 0 {
			prevKey = out[len(out)-1].KeyID
		}
		r, err := parseReport(item, now, true, i, prevKey)
		if err != nil {
			fault = err
			return false
		}
		out = append(out, r)
		return true
	})
	if err != nil {
		return nil, &InvalidError{"reports", "must be an array"}
	}
	if len(out) == 0 && fault == nil {
		fault = batchSizeError()
	}
	// A repeated id before the report at fault is named first, as a
	// reader going through the batch in order would meet it.
	if i, j, ok := firstRepeat(out); ok {
		return nil, &InvalidError{reportField(i, "id"), fmt.Sprintf("repeats the id of reports[%d]", j)}
	}
	if fault != nil {
		return nil, fault
	}
	return out, nil
}

func batchSizeError() error {
	return &InvalidError{"reports", fmt.Sprintf("must hold 1 to %d reports", MaxBatch)}
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

// ParseOne decodes the body of POST /keys/{hash}/usage: one report of that
// key, without its "key" field.
func ParseOne(body []byte, keyID string, now time.Time) (Report, error) {
	r, err := parseReport(body, now, false, -1, "")
	r.KeyID = keyID
	return r, err
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

// parseReport reads one report: of a batch at index i, or alone (i < 0).
// prevKey is the key of the report before it in the batch, if any: the same
// key again takes that string instead of a new one.
func parseReport(body []byte, now time.Time, withKey bool, i int, prevKey string) (Report, error) {
	var (
		r            Report
		bad          *InvalidError
		id, key, cst bool
	)
	fail := func(field, problem string) {
		if bad == nil {
			bad = &InvalidError{reportField(i, field), problem}
		}
	}
	field := func(name string, v json.RawMessage) {
		switch {
		case name == "id":
			id = true
			var ok bool
			if r.ID, ok = jsonobj.String(v); !ok || r.ID == "" || len(r.ID) > maxReportID || strings.ContainsFunc(r.ID, notPrintable) {
				fail("id", "must be 1 to 128 printable ASCII characters")
			}
		case name == "key" && withKey:
			key = true
			if prevKey != "" && len(v) == len(prevKey)+2 && v[0] == '"' && string(v[1:len(v)-1]) == prevKey {
				r.KeyID = prevKey // checked with the report before
				return
			}
			s, ok := jsonobj.String(v)
			if !ok {
				fail("key", "must be a key hash")
			} else if _, ok := keys.ParseID(s); !ok {
				fail("key", "must be a key hash (16 hexadecimal characters)")
			}
			r.KeyID = s
		case name == "cost":
			cst = true
			n, ok := jsonobj.Number(v)
			if !ok {
				fail("cost", "must be a number")
				return
			}
			m, err := money.Parse(n)
			switch {
			case errors.Is(err, money.ErrPrecision):
				fail("cost", "must have at most 6 decimals")
			case err != nil:
				fail("cost", "must be a number in range")
			case m < 0:
				fail("cost", "must be 0 or more")
			case m > MaxCost:
				fail("cost", "must be at most 1000000")
			}
			r.Cost = m
		case name == "byok":
			var ok bool
			if r.BYOK, ok = jsonobj.Bool(v); !ok {
				fail("byok", "must be true or false")
			}
		case name == "at":
			if jsonobj.IsNull(v) {
				return
			}
			t, err := time.Time{}, errNotString
			if s, ok := jsonobj.String(v); ok {
				t, err = time.Parse(time.RFC3339Nano, s)
			}
			switch {
			case err != nil:
				fail("at", "must be an ISO 8601 UTC time")
			case t.After(now.Add(maxClockAhead)):
				fail("at", "must not be in the future")
			case t.Before(now.Add(-MaxReportAge)):
				fail("at", "must be at most 35 days old")
			}
			r.At = t.UTC()
		default:
			fail(name, "unknown field")
		}
	}
	// A report of a batch is an element of a document already checked
	// whole; one report alone is the document. (Called directly, not
	// through a function value, so that field stays on the stack.)
	var err error
	if i >= 0 {
		err = jsonobj.Members(body, field)
	} else {
		err = jsonobj.Walk(body, field)
	}
	if err := documentError(err); err != nil {
		ie := err.(*InvalidError)
		if i >= 0 { // name the report: reports[3] (its body), reports[3].id (a key in it)
			if ie.Field == "body" {
				ie.Field = reportField(i, "")
			} else {
				ie.Field = reportField(i, ie.Field)
			}
		}
		return r, ie
	}
	if bad != nil {
		return r, bad
	}
	for _, req := range []struct {
		set   bool
		field string
	}{{id, "id"}, {key || !withKey, "key"}, {cst, "cost"}} {
		if !req.set {
			return r, &InvalidError{reportField(i, req.field), "required"}
		}
	}
	if r.At.IsZero() {
		r.At = now.UTC()
	}
	return r, nil
}

func notPrintable(r rune) bool { return r < 0x21 || r > 0x7e }

// documentError turns a problem of the JSON document into an
// *InvalidError of its own field ("body", or the duplicated key); nil stays
// nil.
func documentError(err error) error {
	var dup *jsonobj.DuplicateError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &dup):
		return &InvalidError{dup.Key, "duplicate key"}
	default:
		return &InvalidError{"body", err.Error()}
	}
}
