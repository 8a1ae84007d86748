package console

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aigateway/gateway/client"
	"github.com/dustin/go-humanize"
)

// chartDays is the span of the spend charts.
const chartDays = 30

// The chart's drawing area. Across, in % of the drawing's width, which is
// the card's: the bars fill it at 360 px as at 1280 px. Up and down, in
// px, as is the text: a wide card makes the bars wider, not the text
// larger. Every size is an SVG attribute, which the
// Content-Security-Policy allows where it forbids style attributes.
const (
	chartHeight = 224 // px
	plotLeft    = 1   // %
	plotRight   = 99  // %
	plotTop     = 40  // px: room above the top mark for its amount
	plotBottom  = 180 // px: room below for the dates
	// labelClear is how far (in %) the centre of a date must be from the
	// left edge not to be cut off at 360 px.
	labelClear = 8
)

// dayChart is a bar chart of spend per UTC day, drawn as inline SVG by the
// templates, with its figures for those who cannot see it.
type dayChart struct {
	// ID prefixes the ids of the chart's title and description.
	ID string
	// Title names what is charted; Summary says it in one sentence.
	Title, Summary string
	Days           []chartDay
	// Ticks are the scale's gridlines, from 0 up to the top of the scale.
	Ticks []chartTick
	// Empty: no spend on any day charted.
	Empty bool
	// Axis geometry for the template: Left and Right in %, the rest in px.
	Height, Left, Right, Baseline float64
}

// chartDay is one day's bar: its figures and where it is drawn. The bar is
// two stacked rectangles: the BYOK part at the bottom, the rest above.
type chartDay struct {
	Date        string // YYYY-MM-DD
	Label       string // "Nov 24", shown under some bars
	ShowLabel   bool
	Usage       float64
	BYOK        float64
	X, W        float64 // %
	LabelX      float64 // %
	LabelAnchor string  // SVG text-anchor of the date
	// NearEnd marks the date before the last, which narrow screens hide:
	// the last one, drawn ending at the edge, leaves it no room there.
	NearEnd    bool
	Y, H       float64 // the whole bar
	BYOKY      float64 // the BYOK part: from BYOKY down to the baseline
	BYOKH      float64
	Today      bool
	Title      string // the bar's tooltip
	HasBYOKBar bool
}

// chartTick is one gridline of the scale.
type chartTick struct {
	Y     float64
	Label string
}

// newDayChart lays days (oldest first) out as bars under a scale rounded
// up to a readable amount.
func newDayChart(id, title string, days []client.DayUsage) *dayChart {
	c := &dayChart{ID: id, Title: title, Height: chartHeight,
		Left: plotLeft, Right: plotRight, Baseline: plotBottom}
	var top, total float64
	peak := -1
	for i, d := range days {
		total += d.Usage
		if d.Usage > top {
			top, peak = d.Usage, i
		}
	}
	c.Empty = top == 0
	scale := niceCeil(top)
	for i := 0; i <= 2; i++ {
		v := scale * float64(i) / 2
		c.Ticks = append(c.Ticks, chartTick{Y: round1(plotBottom - (plotBottom-plotTop)*v/scale), Label: scaleLabel(v)})
	}
	n := len(days)
	if n == 0 {
		return c
	}
	slot := float64(plotRight-plotLeft) / float64(n)
	step := labelStep(n)
	today := time.Now().UTC().Format(time.DateOnly)
	for i, d := range days {
		day := chartDay{Date: d.Date, Usage: d.Usage, BYOK: min(d.BYOKUsage, d.Usage), Today: d.Date == today}
		day.Label = d.Date
		if t, err := time.Parse(time.DateOnly, d.Date); err == nil {
			day.Label = t.Format("Jan 2")
		}
		// A label every step days, counted back from the last so that the
		// most recent day is always named; none so near the left edge
		// that half of it would be cut off.
		day.ShowLabel = (n-1-i)%step == 0 && slot*(float64(i)+0.5) >= labelClear
		day.NearEnd = i == n-1-step
		day.X = round2(plotLeft + slot*float64(i) + slot*0.15)
		day.W = round2(slot * 0.7)
		day.LabelX, day.LabelAnchor = round2(plotLeft+slot*float64(i)+slot/2), "middle"
		if i == n-1 {
			// The last label ends at the drawing's edge rather than
			// running past it.
			day.LabelX, day.LabelAnchor = plotRight, "end"
		}
		day.H = round1((plotBottom - plotTop) * d.Usage / scale)
		if d.Usage > 0 && day.H < 1 {
			day.H = 1 // a day with any spend shows
		}
		day.Y = round1(plotBottom - day.H)
		if day.BYOK > 0 {
			day.HasBYOKBar = true
			day.BYOKH = round1(day.H * day.BYOK / d.Usage)
			day.BYOKY = round1(plotBottom - day.BYOKH)
		}
		day.Title = day.Label + ": " + usd(d.Usage)
		if day.BYOK > 0 {
			day.Title += " (" + usd(day.BYOK) + " with provider keys)"
		}
		c.Days = append(c.Days, day)
	}
	first, last := days[0].Date, days[n-1].Date
	if c.Empty {
		c.Summary = "No spend from " + first + " to " + last + " (UTC)."
	} else {
		c.Summary = usd(total) + " spent from " + first + " to " + last + " (UTC); the most on " +
			days[peak].Date + ": " + usd(top) + "; today: " + usd(days[n-1].Usage) + ". These figures include BYOK spend."
	}
	return c
}

// labelStep is how many days apart the dates under the bars are: a week
// up to 30 days, three weeks for 90 (at 360 px a week of 90 bars is
// narrower than a date), every other day for a week.
func labelStep(days int) int {
	if days <= 7 {
		return 2
	}
	return 7 * ((days + chartDays - 1) / chartDays)
}

// niceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten, so the
// scale's marks are amounts a person reads at a glance; 0 becomes 1.
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		// A little slack for binary fractions: 0.3 must not become 0.5.
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// scaleLabel writes an amount of the scale exactly as far as it goes: "$0",
// "$5", "$2.50", "$0.0025", "$2,500". (usd rounds to cents, which would
// show a mark of 0.025 as $0.03.)
func scaleLabel(v float64) string {
	if v == 0 {
		return "$0"
	}
	if v >= 1000 {
		return "$" + humanize.Comma(int64(math.Round(v)))
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if whole, frac, ok := strings.Cut(s, "."); ok && len(frac) == 1 {
		s = whole + "." + frac + "0"
	}
	return "$" + s
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// chartOf reads the last days of q and draws them. A refusal of
// the API that still lets the rest of the page show (402: the key is over
// its limit; 403) is returned as a sentence instead of the chart; anything
// else is the page's error.
//
// q.Days is the span, chartDays when zero.
func (v *visit) chartOf(id, title string, q client.DailyQuery) (*dayChart, string, error) {
	if q.Days == 0 {
		q.Days = chartDays
	}
	days, err := v.api.DailyUsage(v.ctx(), q)
	var e *client.Error
	switch {
	case errors.As(err, &e) && (e.StatusCode == http.StatusPaymentRequired || e.StatusCode == http.StatusForbidden):
		return nil, "The daily spend cannot be shown. " + apiMessage(e), nil
	case err != nil:
		return nil, "", err
	}
	return newDayChart(id, title, days), "", nil
}

// chartTitle is a chart's title: what it sums over how long.
func chartTitle(of string) string {
	return "Spend per day of " + of + ", last " + strconv.Itoa(chartDays) + " days (UTC)"
}
