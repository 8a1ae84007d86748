package gateway

import (
	"math"
	"net/url"
	"testing"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/policy/keys"
)

func TestQueryInt(t *testing.T) {
	for s, want := range map[string]int{"0": 0, "5": 5, "100": 100, "007": 7} {
		if n, ok := queryInt(s, 0, 100); !ok || n != want {
			t.Errorf("queryInt(%q) = %d, %v; want %d", s, n, ok, want)
		}
	}
	for _, s := range []string{"", "+5", "-1", " 5", "5 ", "5.0", "1e2", "0x5", "101", "99999999999999999999"} {
		if n, ok := queryInt(s, 0, 100); ok {
			t.Errorf("queryInt(%q) = %d, accepted", s, n)
		}
	}
	if n, ok := queryInt("9223372036854775807", 0, math.MaxInt); !ok || n != math.MaxInt {
		t.Errorf("max int: %d %v", n, ok)
	}
}

func TestReadQuery(t *testing.T) {
	var (
		n    int
		flag bool
	)
	readers := map[string]paramReader{"n": intParam(&n, 1, 10), "flag": boolParam(&flag)}
	if err := readQuery(url.Values{"n": {"7"}, "flag": {"true"}}, refuseUnknown, readers); err != nil || n != 7 || !flag {
		t.Fatalf("readQuery = %v, n %d, flag %v", err, n, flag)
	}
	for _, c := range []struct {
		query   string
		unknown unknownParams
		want    map[string]string // nil: accepted
	}{
		{"", refuseUnknown, nil},
		{"n=0", refuseUnknown, map[string]string{"n": "must be an integer from 1 to 10"}},
		{"n=1&n=2", refuseUnknown, map[string]string{"n": "must be given once"}},
		{"x=1", refuseUnknown, map[string]string{"x": "unknown parameter"}},
		{"x=1&x=2", refuseUnknown, map[string]string{"x": "must be given once"}},
		// Every problem at once, the same on every call.
		{"n=0&flag=yes&x=1", refuseUnknown, map[string]string{"n": "", "flag": "must be true or false", "x": ""}},
		// Ignored parameters are not looked at, however often given.
		{"x=1", ignoreUnknown, nil},
		{"x=1&x=2&n=3", ignoreUnknown, nil},
		{"x=1&n=1&n=2", ignoreUnknown, map[string]string{"n": "must be given once"}},
	} {
		q, err := url.ParseQuery(c.query)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 { // map order must not decide the answer
			err := readQuery(q, c.unknown, readers)
			if c.want == nil {
				if err != nil {
					t.Errorf("?%s: %v, want accepted", c.query, err)
				}
				continue
			}
			checkProblems(t, "?"+c.query, err, c.want)
		}
	}
}

// The list of files reads the three dialects' paging parameters, names
// every problem at once, and ignores what it does not read.
func TestFileListParams(t *testing.T) {
	caller := &keys.APIKey{ID: "k"}
	q, _ := url.ParseQuery("limit=5&order=asc&after=file-1&after_id=a&before_id=b&purpose=batch&provider=openai&workspace_id=w&api-version=2024-10-21&x=1&x=2")
	p, byPage, err := fileListParams(q, caller)
	if err != nil || byPage || p.Limit != 5 || p.Order != files.OrderAsc || p.After != "file-1" || p.AfterID != "a" || p.BeforeID != "b" ||
		p.Purpose != files.PurposeBatch || p.Provider != "openai" || p.WorkspaceID != "w" || p.Key != caller {
		t.Fatalf("fileListParams = %+v, %v, %v", p, byPage, err)
	}
	q, _ = url.ParseQuery("page=c2&limit=")
	if p, byPage, err := fileListParams(q, caller); err != nil || !byPage || p.Cursor != "c2" || p.Limit != 0 {
		t.Fatalf("page: %+v, %v, %v", p, byPage, err)
	}
	for query, want := range map[string]map[string]string{
		"cursor=a&page=b":               {"page": "use either cursor or page"},
		"cursor=a&page=b&limit=0":       {"page": "use either cursor or page", "limit": files.LimitRule},
		"order=sideways&provider=x":     {"order": "must be asc or desc", "provider": "must be openai or anthropic"},
		"purpose=other":                 {"purpose": ""},
		"workspace_id=a&workspace_id=b": {"workspace_id": "must be given once"},
	} {
		q, _ := url.ParseQuery(query)
		_, _, err := fileListParams(q, caller)
		checkProblems(t, "?"+query, err, want)
	}
}
