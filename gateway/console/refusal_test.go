package console

import (
	"strings"
	"testing"

	"github.com/aigateway/gateway/client"
)

func TestFieldSentences(t *testing.T) {
	for _, c := range []struct {
		fields map[string]any
		want   string
	}{
		{map[string]any{"slug": "must be 1 to 50 characters"}, "The slug must be 1 to 50 characters. Correct the slug and send the form again."},
		{map[string]any{"name": "required", "slug": "cannot change: this is the default workspace"},
			"The name is required. The slug cannot change: this is the default workspace. Correct the name and the slug and send the form again."},
		// The API's budget order names the other budget as the field and
		// says it all in its problem: written as it is, not after the field.
		{map[string]any{"monthly": "the daily budget (500) must be less than the monthly budget (100)"},
			"The daily budget (500) must be less than the monthly budget (100). Correct it and send the form again."},
		{map[string]any{"workspace_id": "no such workspace"}, "The workspace: no such workspace. Correct the workspace and send the form again."},
	} {
		if got := fieldSentences(c.fields); got != c.want {
			t.Errorf("fieldSentences(%v)\n got %q\nwant %q", c.fields, got, c.want)
		}
	}
}

func TestAPIMessageOfA400NamesTheFieldsOnly(t *testing.T) {
	e := &client.Error{StatusCode: 400, Message: "Invalid request parameters", Metadata: map[string]any{"fields": map[string]any{"limit": "must be 0 or more"}}}
	if got, want := apiMessage(e), "The spending limit must be 0 or more. Correct the spending limit and send the form again."; got != want {
		t.Errorf("apiMessage = %q, want %q", got, want)
	}
	e = &client.Error{StatusCode: 404, Message: "not found"}
	if got := apiMessage(e); got != "Not found" {
		t.Errorf("apiMessage of a 404 = %q", got)
	}
}

func TestSizesAndPercentagesKeepToOneLine(t *testing.T) {
	a, err := loadAssets()
	if err != nil {
		t.Fatal(err)
	}
	p, err := loadPages(a)
	if err != nil {
		t.Fatal(err)
	}
	funcs := p.byName["usage"]
	for _, c := range []struct{ tmpl, want string }{
		{`{{bytes 31}}`, "31\u00a0B"},
		{`{{bytes 2048}}`, "2.0\u00a0KiB"},
		{`{{percent 1.0 4.0}}`, "25\u00a0%"},
	} {
		tt, err := funcs.Clone()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tt.New("t").Parse(c.tmpl); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := tt.ExecuteTemplate(&b, "t", nil); err != nil {
			t.Fatal(err)
		}
		if b.String() != c.want {
			t.Errorf("%s = %q, want %q", c.tmpl, b.String(), c.want)
		}
	}
}

// The meter's bounds: amber from 80 %, red from 100 %, whatever the limit.
func TestMeterBounds(t *testing.T) {
	for _, limit := range []float64{1, 5, 10, 0.03, 1234.56} {
		if v := 0.8 * limit; !(v > warnAt(limit)) || !(0.79*limit <= warnAt(limit)) {
			t.Errorf("limit %v: 80 %% (%v) is not above the low bound %v", limit, v, warnAt(limit))
		}
		if !(limit > fullAt(limit)) || !(0.99*limit < fullAt(limit)) {
			t.Errorf("limit %v: the limit is not above the high bound %v", limit, fullAt(limit))
		}
	}
}
