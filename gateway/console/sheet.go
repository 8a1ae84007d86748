package console

import (
	"encoding/csv"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/aigateway/gateway/client"
	"github.com/dustin/go-humanize"
)

// sheet is a table of figures that a page shows and that downloads as CSV
// from the same rows: what a person reads on the page is what lands in
// the spreadsheet, only with plain numbers instead of "$1,234.50".
type sheet struct {
	// ID is the table's id in the page and its name in the CSV link.
	ID, Title string
	// Covers says what the figures cover (which days, from which call of
	// the API), shown beside the table.
	Covers  string
	Columns []sheetColumn
	Rows    [][]sheetCell
	// CSV is the address of the download of these rows.
	CSV string
	// Empty is said instead of an empty table, or of the rows the API
	// refused (refusal), which a download answers with.
	Empty   string
	refusal *client.Error
}

// sheetColumn is a column: its heading on the page and in the CSV.
type sheetColumn struct {
	Title, Name string
	// Num aligns the column's figures to the right.
	Num bool
}

// sheetCell is a value: Text on the page (also the CSV's, unless Value is
// set), an optional link, and an optional meter of Used against Of.
type sheetCell struct {
	Text, Value, Href string
	Meter             *meterValue
}

// meterValue is a meter's reading against a limit.
type meterValue struct{ Used, Of float64 }

// csvValue is the cell as the CSV writes it.
func (c sheetCell) csvValue() string {
	if c.Value != "" {
		return c.Value
	}
	return c.Text
}

func textCell(s string) sheetCell { return sheetCell{Text: s} }

// dollarCell shows an amount as usd does and writes it as a plain number.
func dollarCell(v float64) sheetCell { return sheetCell{Text: usd(v), Value: plainAmount(v)} }

// countCell shows a count with thousands separators and writes it bare.
func countCell(n int64) sheetCell {
	return sheetCell{Text: humanize.Comma(n), Value: strconv.FormatInt(n, 10)}
}

// plainAmount writes dollars as a spreadsheet reads them: at most the six
// decimals a report carries, so sums of binary fractions do not show as
// 0.30000000000000004.
func plainAmount(v float64) string {
	return strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64)
}

// writeCSV answers with the sheet's rows as a CSV attachment named
// base.csv (made safe here).
//
// A cell that starts with = + - @ (or a tab or carriage return, which
// some spreadsheets skip before looking) is written with a ' before it:
// names come from whoever reported usage or named a key, and a
// spreadsheet would otherwise run such a cell as a formula (CSV
// injection).
func writeCSV(w http.ResponseWriter, base string, s *sheet) {
	h := w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": csvFilename(base)}))
	h.Set("Cache-Control", "no-store")
	cw := csv.NewWriter(w)
	head := make([]string, len(s.Columns))
	for i, c := range s.Columns {
		head[i] = c.Name
	}
	_ = cw.Write(head)
	for _, row := range s.Rows {
		rec := make([]string, len(row))
		for i, c := range row {
			rec[i] = defuseFormula(c.csvValue())
		}
		_ = cw.Write(rec)
	}
	cw.Flush()
}

// defuseFormula makes a cell that a spreadsheet would read as a formula
// read as text.
func defuseFormula(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// csvFilename is base.csv with base's letters, digits, dots, dashes and
// underscores kept (anything else becomes a dash), so that a name taken
// from the request can neither break the header nor name a path or a
// hidden file.
func csvFilename(base string) string {
	b := []byte(base)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			b[i] = '-'
		}
	}
	s := strings.TrimLeft(string(b), ".")
	if len(s) > 100 {
		s = s[:100]
	}
	if s == "" {
		s = "export"
	}
	return s + ".csv"
}
