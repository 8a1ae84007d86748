package console

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aigateway/gateway/client"
	"github.com/dustin/go-humanize"
)

//go:embed templates/*.html
var templateFiles embed.FS

// pages are the parsed templates, one set per page: the layout and the
// page's own "content".
type pages struct {
	byName map[string]*template.Template
}

func loadPages(a *assets) (*pages, error) {
	funcs := template.FuncMap{
		"asset": a.url,
		"usd":   usd,
		// Sizes and percentages keep their unit on their line: "31 B"
		// never wraps.
		"bytes": func(n int64) string { return noBreak(humanize.IBytes(uint64(max(n, 0)))) },
		"when": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return t.UTC().Format("2006-01-02 15:04 UTC")
		},
		"percent": func(used, limit float64) string {
			if limit <= 0 {
				return "0\u00a0%"
			}
			return strconv.FormatFloat(math.Floor(100*used/limit), 'f', 0, 64) + "\u00a0%"
		},
		"warnAt":    warnAt,
		"fullAt":    fullAt,
		"limitText": limitText,
		"deref": func(s *string) string {
			if s == nil {
				return ""
			}
			return *s
		},
		"num": func(f *float64) float64 {
			if f == nil {
				return 0
			}
			return *f
		},
		// used is what a key spent in its limit's current window.
		"used": func(k client.Key) float64 {
			if k.Limit == nil || k.LimitRemaining == nil {
				return 0
			}
			return max(*k.Limit-*k.LimitRemaining, 0)
		},
		// perMillion shows a per-token price per million tokens.
		"perMillion": func(price string) string {
			f, err := strconv.ParseFloat(price, 64)
			switch {
			case err != nil:
				return "—"
			case f < 0:
				return "varies"
			}
			return usd(f * 1e6)
		},
		"join": strings.Join,
	}
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html")
	if err != nil {
		return nil, err
	}
	names, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		return nil, err
	}
	p := &pages{byName: map[string]*template.Template{}}
	for _, name := range names {
		page := strings.TrimSuffix(path.Base(name), ".html")
		if page == "layout" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFiles, name)
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		p.byName[page] = t
	}
	return p, nil
}

// view is what every page template gets.
type view struct {
	Title string
	// Nav names the menu entry of the page, for aria-current.
	Nav  string
	Me   *whoami
	CSRF string
	// Flash is the outcome of the last action, shown once.
	Flash *flash
	// Form is a refused form shown again, with what was typed.
	Form draft
	Data any
}

// flash is a message carried across a redirect: "ok" or "error", and
// where to go next.
type flash struct {
	Kind  string      `json:"k"`
	Text  string      `json:"t"`
	Links []flashLink `json:"l,omitempty"`
}

// flashLink is a next step a message offers.
type flashLink struct {
	Text string `json:"t"`
	Href string `json:"h"`
}

// bufPool holds render buffers: a page is rendered whole before a byte is
// sent, so a template error becomes an error page rather than half a page.
var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (c *Console) render(w http.ResponseWriter, status int, page string, v view) {
	t, ok := c.pages.byName[page]
	if !ok {
		c.log.Error("console: no such template", "page", page)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	if err := t.ExecuteTemplate(buf, "layout.html", v); err != nil {
		c.log.Error("console: render", "page", page, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	// Pages show keys, names and usage: never kept by a cache, and a
	// page left behind is not shown again from history without a request.
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// refuse answers with a page that says, in words, what went wrong.
func (c *Console) refuse(w http.ResponseWriter, r *http.Request, status int, message string) {
	c.render(w, status, "error", view{Title: http.StatusText(status), Data: message})
}

// noBreak joins the words of s with no-break spaces.
func noBreak(s string) string { return strings.ReplaceAll(s, " ", "\u00a0") }

// A meter of spend against a limit (optimum 0) is green up to its low
// bound, amber up to its high bound and red above it, as Chromium draws
// it. So that it turns amber at 80 % and red at 100 %, each bound sits
// just below its mark (by a billionth of it), where spend at the mark is
// above it.
func warnAt(limit float64) float64 { return belowMark(0.8 * limit) }

func fullAt(limit float64) float64 { return belowMark(limit) }

func belowMark(v float64) float64 { return v * (1 - 1e-9) }

// limitText writes a limit as typed in a form: "12.5", "" for none.
func limitText(f *float64) string {
	if f == nil {
		return ""
	}
	return strconv.FormatFloat(*f, 'f', -1, 64)
}

// usd formats an amount in US dollars, with cents, and more digits for
// amounts below a cent so small usage is not shown as zero.
func usd(v float64) string {
	switch {
	case v == 0:
		return "$0.00"
	case math.Abs(v) < 0.01:
		return "$" + strconv.FormatFloat(v, 'f', -1, 64)
	default:
		return "$" + humanize.CommafWithDigits(math.Round(v*100)/100, 2)
	}
}

// setFlash remembers a message for the next page of this browser, sealed
// so that nothing but the console can put words on its pages.
func (c *Console) setFlash(w http.ResponseWriter, r *http.Request, kind, text string) {
	b, _ := json.Marshal(flash{Kind: kind, Text: text})
	v, err := c.sealer.sealValue(b, flashAAD)
	if err != nil {
		return
	}
	c.cookies.set(w, r, flashCookie, v, time.Minute)
}

// takeFlash returns the message set by the last action, and clears it.
func (c *Console) takeFlash(w http.ResponseWriter, r *http.Request) *flash {
	ck, err := r.Cookie(flashCookie)
	if err != nil {
		return nil
	}
	c.cookies.clear(w, r, flashCookie)
	b, err := c.sealer.openValue(ck.Value, flashAAD)
	if err != nil {
		return nil
	}
	var f flash
	if json.Unmarshal(b, &f) != nil || f.Text == "" {
		return nil
	}
	return &f
}

const flashCookie = "console_flash"

var flashAAD = []byte("gateway console flash v1")
