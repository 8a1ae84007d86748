package console

import (
	"encoding/csv"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// Every cell a spreadsheet would take for a formula reads as text; others
// are left as they are, numbers included.
func TestCSVDefusesFormulas(t *testing.T) {
	s := &sheet{Columns: []sheetColumn{{Name: "name"}, {Name: "spend_usd"}}}
	for _, name := range []string{"=1+1", "+1", "-2", "@SUM(A1)", "\t=1", "\r=1", "plain", "a=b", ""} {
		s.Rows = append(s.Rows, []sheetCell{textCell(name), dollarCell(0.1 + 0.2)})
	}
	w := httptest.NewRecorder()
	writeCSV(w, "spend", s)
	recs, err := csv.NewReader(strings.NewReader(w.Body.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range recs[1:] {
		names = append(names, r[0])
		if r[1] != "0.3" {
			t.Errorf("an amount written %q, want 0.3", r[1])
		}
	}
	want := []string{"'=1+1", "'+1", "'-2", "'@SUM(A1)", "'\t=1", "'\r=1", "plain", "a=b", ""}
	if !slices.Equal(names, want) {
		t.Errorf("cells %q, want %q", names, want)
	}
}

// A filename taken from the request can neither break the header nor
// name a path.
func TestCSVFilename(t *testing.T) {
	for in, want := range map[string]string{
		"spend-by-model-30d-2026-11-27": "spend-by-model-30d-2026-11-27.csv",
		`key-"; x=y/../../etc`:          "key----x-y-..-..-etc.csv",
		"../x":                          "-x.csv",
		"..":                            "export.csv",
		"":                              "export.csv",
		"ключ":                          "--------.csv",
	} {
		if got := csvFilename(in); got != want {
			t.Errorf("csvFilename(%q) = %q, want %q", in, got, want)
		}
	}
}
