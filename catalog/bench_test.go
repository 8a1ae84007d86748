package catalog

import (
	"io"
	"net/http"
	"os"
	"testing"
	"time"
)

func shippedCatalog(b *testing.B) *Catalog {
	b.Helper()
	c, _ := loadShipped(b)
	return c
}

// BenchmarkLookup resolves a plain id in the shipped catalog: 0 allocs/op.
func BenchmarkLookup(b *testing.B) {
	c := shippedCatalog(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := c.Lookup("anthropic", "claude-sonnet-5"); !ok {
			b.Fatal("not found")
		}
	}
}

// BenchmarkLookupVariantAlias resolves names that go through the variant
// and alias rules; they are table entries too.
func BenchmarkLookupVariantAlias(b *testing.B) {
	c := shippedCatalog(b)
	names := [][2]string{{"openai", "gpt-oss-120b:nitro"}, {"~anthropic", "claude-sonnet-latest"},
		{"~openai", "tts-latest"}, {"anthropic", "claude-sonnet-5-20260630"}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		n := names[i%len(names)]
		if _, ok := c.Lookup(n[0], n[1]); !ok {
			b.Fatal(n)
		}
		i++
	}
}

// discardWriter is an http.ResponseWriter that drops the body, reusing its
// header map as net/http does within a connection.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return io.Discard.Write(p) }
func (w *discardWriter) WriteHeader(int)             {}

// BenchmarkLookupAndWrite is the catalog's share of a model response: read
// the current catalog once, resolve, set the headers and write the
// pre-encoded body.
func BenchmarkLookupAndWrite(b *testing.B) {
	src, err := Open(shippedPath, nil)
	if err != nil {
		b.Fatal(err)
	}
	w := &discardWriter{h: http.Header{}}
	ctype := []string{"application/json"}
	b.ReportAllocs()
	for b.Loop() {
		e, ok := src.Current().Lookup("anthropic", "claude-sonnet-5")
		if !ok {
			b.Fatal("not found")
		}
		h := w.Header()
		h["Content-Type"] = ctype
		h.Set("Etag", e.ETag)
		w.WriteHeader(http.StatusOK)
		if _, err := w.Write(e.Body); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(src.Current().List().Body) / src.Current().Len()))
}

func BenchmarkPrice(b *testing.B) {
	c := shippedCatalog(b)
	e, _ := c.LookupID("deepseek/deepseek-v4-pro")
	at := time.Date(2026, 8, 18, 3, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Price(e.Model, 250000, at); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadShipped is the cost of a reload of the shipped catalog.
func BenchmarkLoadShipped(b *testing.B) {
	data, err := os.ReadFile(shippedPath)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FromBytes(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFilteredPage is a filtered and sorted page of 100 over the
// shipped catalog, as GET /api/v1/models?supported_parameters=tools&sort=
// context-high-to-low&limit=100 selects it, encoded (goal: under 50 µs).
func BenchmarkFilteredPage(b *testing.B) {
	c := shippedCatalog(b)
	params, err := c.ParseParameters("tools")
	if err != nil {
		b.Fatal(err)
	}
	q := Query{OutputModalities: TextOnly, Parameters: params, Sort: SortContextHighToLow, Limit: 100}
	b.ReportAllocs()
	for b.Loop() {
		page, total := c.Select(q, false)
		if len(page) != 100 {
			b.Fatalf("%d of %d", len(page), total)
		}
		if _, err := WriteList(io.Discard, page, total, "/api/v1/models?offset=100", false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFilteredSelect is the selection alone, without the encoding:
// what the indexes cost.
func BenchmarkFilteredSelect(b *testing.B) {
	c := shippedCatalog(b)
	params, _ := c.ParseParameters("tools")
	q := Query{OutputModalities: TextOnly, Parameters: params, Sort: SortContextHighToLow, Limit: 100}
	b.ReportAllocs()
	for b.Loop() {
		c.Select(q, false)
	}
}
