package spend

import (
	"time"

	"github.com/aigateway/gateway/internal/money"
)

// WindowSum is the usage of one window of an interval: the window is
// named by its first day (as Day numbers it).
type WindowSum struct {
	Start      int64
	Cost, BYOK money.Micros
}

// Totals are the running sums of a key's or a workspace's usage, kept as
// reports are recorded so that the 402 decision never sums history: all
// time, and per interval the two latest windows reports fell in, newest
// first. Two suffice: a report is at most a minute ahead of the clock, so
// at most one window newer than the current one can have reports, and the
// current one is then the other.
type Totals struct {
	Total, BYOKTotal       money.Micros
	Daily, Weekly, Monthly [2]WindowSum
}

// windowStartDay is the first day of iv's window holding day.
func windowStartDay(iv Interval, day int64) int64 {
	switch iv {
	case Daily:
		return day
	case Weekly:
		// Day 0 (1970-01-01) was a Thursday, 3 days after a Monday.
		return day - (day+3)%7
	case Monthly:
		return Day(Monthly.Start(time.Unix(day*86400, 0)))
	}
	return 0
}

// Add counts a report of cost on day (byok: served with the user's own
// provider key) and reports false, changing nothing, when a sum would
// overflow.
func (t *Totals) Add(day int64, cost money.Micros, byok bool) bool {
	next := *t
	var ok bool
	if next.Total, ok = next.Total.Add(cost); !ok {
		return false
	}
	if byok {
		next.BYOKTotal, _ = next.BYOKTotal.Add(cost) // at most Total
	}
	for _, w := range [...]struct {
		iv Interval
		s  *slots
	}{{Daily, (*slots)(&next.Daily)}, {Weekly, (*slots)(&next.Weekly)}, {Monthly, (*slots)(&next.Monthly)}} {
		if !w.s.add(windowStartDay(w.iv, day), cost, byok) {
			return false
		}
	}
	*t = next
	return true
}

// slots are the two latest windows of an interval, newest first; a slot
// never used has Start 0 (no report is of 1970) and nothing in it.
type slots [2]WindowSum

func (s *slots) add(start int64, cost money.Micros, byok bool) bool {
	i := s.slotFor(start)
	if i < 0 {
		return true // older than both: no decision reads it again
	}
	var ok bool
	if s[i].Cost, ok = s[i].Cost.Add(cost); !ok {
		return false
	}
	if byok {
		s[i].BYOK, _ = s[i].BYOK.Add(cost)
	}
	return true
}

// slotFor returns the slot of the window starting at start, making room
// for it when it is newer than one of the two held; -1 when it is older
// than both.
func (s *slots) slotFor(start int64) int {
	switch {
	case s[0].Start == start:
		return 0
	case s[1].Start == start:
		return 1
	case start > s[0].Start:
		s[1], s[0] = s[0], WindowSum{Start: start}
		return 0
	case start > s[1].Start:
		s[1] = WindowSum{Start: start}
		return 1
	}
	return -1
}

// in is the window starting at start, or nothing.
func (s slots) in(start int64) WindowSum {
	for _, w := range s {
		if w.Start == start {
			return w
		}
	}
	return WindowSum{}
}

// merge keeps, of two views of one interval's windows, the two latest,
// each with the larger sums: sums only grow, so the larger is the later.
func (s slots) merge(o slots) slots {
	out := s
	for _, w := range o {
		if w.Start == 0 {
			continue
		}
		if i := out.slotFor(w.Start); i >= 0 {
			out[i].Cost, out[i].BYOK = max(out[i].Cost, w.Cost), max(out[i].BYOK, w.BYOK)
		}
	}
	return out
}

// Usage is t in the windows of w.
func (t Totals) Usage(w Windows) Usage {
	d, wk, m := slots(t.Daily).in(w.Daily), slots(t.Weekly).in(w.Weekly), slots(t.Monthly).in(w.Monthly)
	return Usage{
		Total: t.Total, Daily: d.Cost, Weekly: wk.Cost, Monthly: m.Cost,
		BYOKTotal: t.BYOKTotal, BYOKDaily: d.BYOK, BYOKWeekly: wk.BYOK, BYOKMonthly: m.BYOK,
	}
}

// Merge is the later of two views of the same totals, whichever order
// they were read in: the sums only grow, so each is the larger of the two.
func (t Totals) Merge(o Totals) Totals {
	return Totals{
		Total: max(t.Total, o.Total), BYOKTotal: max(t.BYOKTotal, o.BYOKTotal),
		Daily:   slots(t.Daily).merge(o.Daily),
		Weekly:  slots(t.Weekly).merge(o.Weekly),
		Monthly: slots(t.Monthly).merge(o.Monthly),
	}
}
