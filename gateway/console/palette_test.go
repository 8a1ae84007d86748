package console

import (
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// colourPair is two colours of the palette that meet on a page, and the
// contrast WCAG 2.2 AA asks of them.
type colourPair struct {
	fg, bg string
	min    float64
	where  string
}

const (
	textContrast    = 4.5 // 1.4.3, text of normal size
	nonTextContrast = 3.0 // 1.4.11, what must be seen to be used
)

// paletteUse is every place two colours of the palette meet.
var paletteUse = []colourPair{
	{"fg", "card", textContrast, "text on cards, inputs and secondary buttons"},
	{"fg", "bg", textContrast, "text on the page"},
	{"fg", "th-bg", textContrast, "table headings"},
	{"muted", "card", textContrast, "hints and chart labels on cards"},
	{"muted", "bg", textContrast, "hints on the page"},
	{"accent", "card", textContrast, "links on cards"},
	{"accent", "bg", textContrast, "links on the page"},
	{"on-accent", "accent", textContrast, "primary buttons"},
	{"ok", "ok-bg", textContrast, "the success banner"},
	{"err", "err-bg", textContrast, "the error banner"},
	{"err", "card", textContrast, "destructive steps (Disable…, Delete…)"},
	{"on-accent", "err", textContrast, "the confirmation of a destructive step"},
	{"top-fg", "top-bg", textContrast, "the header's links"},
	{"top-muted", "top-bg", textContrast, "who is signed in, in the header"},
	{"control-line", "card", nonTextContrast, "the border of inputs and buttons"},
	{"focus", "card", nonTextContrast, "the focus ring on cards"},
	{"focus", "bg", nonTextContrast, "the focus ring on the page"},
	{"focus-top", "top-bg", nonTextContrast, "the focus ring in the header"},
	{"top-line", "top-bg", nonTextContrast, "the sign-out button's border"},
	{"ok", "card", nonTextContrast, "the border of a new key's card"},
	{"chart-spend", "card", nonTextContrast, "the chart's spend bars"},
	{"chart-byok", "card", nonTextContrast, "the chart's BYOK bars"},
}

// decorative colours carry no meaning of their own (separators, a card's
// edge), so no contrast is asked of them.
var decorative = map[string]bool{"line": true, "danger-line": true}

// TestPaletteContrast checks every pair of the stylesheet's palette that
// meets on a page, and that the palette is the stylesheet's only source of
// colour, so a colour added without a pair here fails.
func TestPaletteContrast(t *testing.T) {
	css, err := os.ReadFile("assets/console.css")
	if err != nil {
		t.Fatal(err)
	}
	palette, rest := readPalette(t, string(css))
	used := map[string]bool{}
	for _, p := range paletteUse {
		used[p.fg], used[p.bg] = true, true
		fg, ok1 := palette[p.fg]
		bg, ok2 := palette[p.bg]
		if !ok1 || !ok2 {
			t.Errorf("%s: --%s or --%s is not in the palette", p.where, p.fg, p.bg)
			continue
		}
		if got := contrast(fg, bg); got < p.min {
			t.Errorf("%s: --%s %s on --%s %s is %.2f:1, want at least %.1f:1", p.where, p.fg, fg, p.bg, bg, got, p.min)
		}
	}
	for name := range palette {
		if !used[name] && !decorative[name] {
			t.Errorf("--%s is in the palette but in no pair checked here", name)
		}
	}
	if lit := hexColour.FindAllString(rest, -1); len(lit) > 0 {
		t.Errorf("colours outside the palette: %q (add them to :root and to paletteUse)", lit)
	}
}

var (
	paletteEntry = regexp.MustCompile(`--([a-z-]+):\s*(#[0-9a-fA-F]{6}|#[0-9a-fA-F]{3})\b`)
	hexColour    = regexp.MustCompile(`#[0-9a-fA-F]{3}(?:[0-9a-fA-F]{3})?\b`)
)

// readPalette reads the custom properties of the stylesheet's :root, and
// returns the rest of the stylesheet up to the Files and Models section
// (another page's, which keeps its own colours).
func readPalette(t *testing.T, css string) (map[string]string, string) {
	t.Helper()
	start := strings.Index(css, ":root {")
	end := strings.Index(css[start:], "}")
	if start < 0 || end < 0 {
		t.Fatal("no :root block in the stylesheet")
	}
	root := css[start : start+end]
	palette := map[string]string{}
	for _, m := range paletteEntry.FindAllStringSubmatch(root, -1) {
		palette[m[1]] = m[2]
	}
	rest := css[start+end:]
	if i := strings.Index(rest, "/* Files and models pages. */"); i >= 0 {
		rest = rest[:i]
	}
	return palette, rest
}

// contrast is WCAG's contrast ratio of two #rrggbb or #rgb colours.
func contrast(a, b string) float64 {
	la, lb := luminance(a), luminance(b)
	return (math.Max(la, lb) + 0.05) / (math.Min(la, lb) + 0.05)
}

func luminance(hex string) float64 {
	h := strings.TrimPrefix(hex, "#")
	if len(h) == 3 {
		h = string([]byte{h[0], h[0], h[1], h[1], h[2], h[2]})
	}
	var rgb [3]float64
	for i := range rgb {
		n, _ := strconv.ParseUint(h[2*i:2*i+2], 16, 8)
		c := float64(n) / 255
		if c <= 0.04045 {
			rgb[i] = c / 12.92
		} else {
			rgb[i] = math.Pow((c+0.055)/1.055, 2.4)
		}
	}
	return 0.2126*rgb[0] + 0.7152*rgb[1] + 0.0722*rgb[2]
}

func TestContrastOfKnownPairs(t *testing.T) {
	// The field report's figures: the old success banner and focus ring.
	for _, c := range []struct {
		a, b string
		want float64
	}{{"#1a7f37", "#e6f4ea", 4.47}, {"#f0b400", "#fff", 1.87}, {"#000", "#fff", 21}} {
		if got := contrast(c.a, c.b); math.Abs(got-c.want) > 0.005 {
			t.Errorf("contrast(%s, %s) = %.3f, want %.2f", c.a, c.b, got, c.want)
		}
	}
}
