package gateway

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/aigateway/gateway/internal/invalid"
	"go.uber.org/zap"
)

// The one query reader of the lists.

// paramReader reads the one value of a query parameter into the route's
// query, or says what is wrong with it ("" when nothing is).
type paramReader func(value string) (problem string)

// unknownParams says what a list does with a parameter it has no reader
// for.
type unknownParams bool

const (
	// refuseUnknown: a 400 naming the parameter, so that a misspelt filter
	// is not taken for no filter.
	refuseUnknown unknownParams = false
	// ignoreUnknown: the parameter is not looked at, not even for being
	// given twice. The lists of files and workspaces have always ignored
	// what they do not read, and the resources' spec names nothing they
	// must refuse; the list of files answers the SDKs of three APIs, whose
	// clients may add parameters of their own (see fileListParams).
	ignoreUnknown unknownParams = true
)

// readQuery reads a list's query the one way every list shares: each
// parameter the route reads is given at most once (a parameter given
// twice is refused by name, never silently read once) and read by its
// reader; a parameter without a reader is refused or ignored as unknown
// says. Every problem is named at once, in *invalid.Problems.
func readQuery(query url.Values, unknown unknownParams, readers map[string]paramReader) error {
	p := queryProblems(query, unknown, readers)
	return p.Err()
}

// queryProblems is readQuery for a route that adds problems of its own,
// of parameters read together.
func queryProblems(query url.Values, unknown unknownParams, readers map[string]paramReader) (p invalid.Problems) {
	names := make([]string, 0, len(query))
	for name := range query {
		names = append(names, name)
	}
	slices.Sort(names) // the same query, the same answer
	for _, name := range names {
		read, known := readers[name]
		if !known && unknown == ignoreUnknown {
			continue
		}
		switch vs := query[name]; {
		case len(vs) != 1:
			p.Add(name, "must be given once")
		case !known:
			p.Add(name, "unknown parameter")
		default:
			if problem := read(vs[0]); problem != "" {
				p.Add(name, problem)
			}
		}
	}
	return p
}

// intParam reads an integer from lo to hi into dst.
func intParam(dst *int, lo, hi int) paramReader {
	return intParamSaying(dst, lo, hi, "must be an integer from "+strconv.Itoa(lo)+" to "+strconv.Itoa(hi))
}

// intParamSaying is intParam with a problem of its own.
func intParamSaying(dst *int, lo, hi int, problem string) paramReader {
	return func(v string) string {
		n, ok := queryInt(v, lo, hi)
		if !ok {
			return problem
		}
		*dst = n
		return ""
	}
}

// boolParam reads "true" or "false" into dst.
func boolParam(dst *bool) paramReader {
	return func(v string) string {
		if v != "true" && v != "false" {
			return "must be true or false"
		}
		*dst = v == "true"
		return ""
	}
}

// workspaceParam reads a workspace id or slug into dst.
func workspaceParam(dst *string) paramReader {
	return func(v string) string {
		if v == "" || len(v) > 64 {
			return "must be a workspace id or slug"
		}
		*dst = v
		return ""
	}
}

// stringParam reads the value as it is into dst; the domain judges it.
func stringParam(dst *string) paramReader {
	return func(v string) string {
		*dst = v
		return ""
	}
}

// queryInt reads s as an integer from lo to hi, the one strict way every
// list of the API shares: decimal digits only. "+5", "5.0", " 5" and "0x5"
// are not integers here, whatever strconv would make of them.
func queryInt(s string, lo, hi int) (int, bool) {
	if s == "" || len(s) > 19 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, false
	}
	return n, true
}

// refuseQuerySemicolons answers 400 for a query with a raw ';'. Go reads
// only '&' as a separator and silently drops a pair holding ';' (golang.org/
// issue/25192), so "?limit=1;offset=2" would be served as if neither were
// given, and a misspelt filter behind a ';' would pass unseen by the
// routes that refuse unknown parameters. An escaped %3B is a value's
// semicolon and is read as such.
func refuseQuerySemicolons(log *zap.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.IndexByte(r.URL.RawQuery, ';') >= 0 {
				var p invalid.Problems
				p.Add("query", "';' is not a parameter separator (parameters are joined by ampersands; a semicolon within a value is %3B)")
				writeError(w, r, log, p.Err())
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
