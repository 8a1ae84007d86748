package console

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/client"
)

// thirtyDays is a history of 30 days ending today with spend on two days.
func thirtyDays(today, earlier client.DayUsage) []client.DayUsage {
	end := time.Now().UTC().Truncate(24 * time.Hour)
	days := make([]client.DayUsage, 30)
	for i := range days {
		days[i].Date = end.AddDate(0, 0, i-29).Format(time.DateOnly)
	}
	today.Date, earlier.Date = days[29].Date, days[10].Date
	days[29], days[10] = today, earlier
	return days
}

func TestDayChartLayout(t *testing.T) {
	days := thirtyDays(client.DayUsage{Usage: 2.5, BYOKUsage: 0.5}, client.DayUsage{Usage: 0.000001})
	c := newDayChart("c", "Spend", days)
	if len(c.Days) != 30 || c.Empty {
		t.Fatalf("%d days, empty %v", len(c.Days), c.Empty)
	}
	today, tiny, zero := c.Days[29], c.Days[10], c.Days[0]
	full := float64(plotBottom - plotTop)
	if !today.Today || today.H != full || today.Y != plotTop || today.BYOKH != full/5 || today.BYOKY != plotBottom-full/5 || !today.HasBYOKBar {
		t.Errorf("today's bar: %+v", today)
	}
	if tiny.H != 1 || tiny.HasBYOKBar {
		t.Errorf("a millionth of a dollar must still show: %+v", tiny)
	}
	if zero.H != 0 || zero.Y != plotBottom || zero.Today {
		t.Errorf("a day without spend: %+v", zero)
	}
	for i := 1; i < 30; i++ {
		if c.Days[i].X <= c.Days[i-1].X+c.Days[i-1].W {
			t.Fatalf("bars %d and %d overlap", i-1, i)
		}
	}
	if last := c.Days[29]; last.X+last.W > plotRight || c.Days[0].X < plotLeft {
		t.Errorf("bars outside the plot: first at %v, last ends at %v", c.Days[0].X, last.X+last.W)
	}
	var labels []string
	for _, d := range c.Days {
		if d.ShowLabel {
			labels = append(labels, d.Date)
			if d.LabelX < labelClear {
				t.Errorf("label %s at %v would be cut at the left edge", d.Date, d.LabelX)
			}
		}
	}
	if len(labels) != 4 || labels[3] != days[29].Date || c.Days[29].LabelAnchor != "end" || c.Days[22].LabelAnchor != "middle" {
		t.Errorf("labels %v, last anchored %q", labels, c.Days[29].LabelAnchor)
	}
	if got := fmt.Sprint(c.Ticks); got != fmt.Sprintf("[{%v $0} {%v $1.25} {%v $2.50}]", float64(plotBottom), (plotBottom+plotTop)/2.0, float64(plotTop)) {
		t.Errorf("ticks %s", got)
	}
	if !strings.Contains(c.Summary, "$2.50 spent") || !strings.Contains(c.Summary, "the most on "+days[29].Date) {
		t.Errorf("summary %q", c.Summary)
	}
	if e := newDayChart("c", "Spend", thirtyDays(client.DayUsage{}, client.DayUsage{})); !e.Empty || !strings.HasPrefix(e.Summary, "No spend") {
		t.Errorf("no spend: %+v", e)
	}
}

func TestNiceScale(t *testing.T) {
	for v, want := range map[float64]float64{0: 1, 0.000001: 0.000001, 0.3: 0.5, 1: 1, 1.01: 2, 2.2: 2.5, 2.5: 2.5, 7: 10, 12: 20, 2600: 5000} {
		if got := niceCeil(v); got != want {
			t.Errorf("niceCeil(%v) = %v, want %v", v, got, want)
		}
	}
	for v, want := range map[float64]string{0: "$0", 5: "$5", 2.5: "$2.50", 1.25: "$1.25", 0.0025: "$0.0025", 0.025: "$0.025", 2500: "$2,500"} {
		if got := scaleLabel(v); got != want {
			t.Errorf("scaleLabel(%v) = %q, want %q", v, got, want)
		}
	}
}

// The chart as the pages draw it: an image with a title and a description,
// sized by SVG attributes only (the CSP forbids style attributes), its
// figures in a table, names shown as text.
func TestDayChartMarkup(t *testing.T) {
	a, err := loadAssets()
	if err != nil {
		t.Fatal(err)
	}
	p, err := loadPages(a)
	if err != nil {
		t.Fatal(err)
	}
	c := newDayChart("key-chart", chartTitle(`key “<script>alert(1)</script>”`), thirtyDays(client.DayUsage{Usage: 2.5, BYOKUsage: 0.5}, client.DayUsage{}))
	var b bytes.Buffer
	if err := p.byName["usage"].ExecuteTemplate(&b, "daychart", c); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{
		`<svg class="chart" width="100%" height="224" role="img" aria-labelledby="key-chart-title key-chart-desc"`,
		`<title id="key-chart-title">Spend per day of key “&lt;script&gt;alert(1)&lt;/script&gt;”, last 30 days (UTC)</title>`,
		`<desc id="key-chart-desc">$2.50 spent from `, `These figures include BYOK spend.`,
		`<rect class="spend" x="`, `height="140"`, `<rect class="byok" x="`, `height="28"`,
		`<caption class="visually-hidden">`, `<td>$2.50</td><td>$0.50</td>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the chart lacks %s", want)
		}
	}
	for _, banned := range []string{"style=", "<script>", "<style"} {
		if strings.Contains(html, banned) {
			t.Errorf("the chart holds %q", banned)
		}
	}
	if n := strings.Count(html, `<rect class="spend"`); n != 30 {
		t.Errorf("%d bars, want 30", n)
	}
}

// The dates under the bars stay apart at 360 px whatever the span.
func TestLabelStep(t *testing.T) {
	for days, want := range map[int]int{7: 2, 30: 7, 90: 21} {
		if got := labelStep(days); got != want {
			t.Errorf("labelStep(%d) = %d, want %d", days, got, want)
		}
	}
}
