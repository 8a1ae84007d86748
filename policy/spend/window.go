package spend

import "time"

// Interval is the window a limit or a budget is counted in. Windows start at
// 00:00 UTC; weeks start on Monday; Lifetime never resets.
type Interval string

// Intervals, widest first: the order budgets are listed and must decrease in.
const (
	Lifetime Interval = "lifetime"
	Monthly  Interval = "monthly"
	Weekly   Interval = "weekly"
	Daily    Interval = "daily"
)

// Intervals lists every interval, widest first.
var Intervals = []Interval{Lifetime, Monthly, Weekly, Daily}

// Valid reports whether iv is a known interval.
func (iv Interval) Valid() bool {
	return iv == Lifetime || iv == Monthly || iv == Weekly || iv == Daily
}

// rank orders intervals from the widest (0) to the narrowest.
func (iv Interval) rank() int {
	for i, v := range Intervals {
		if v == iv {
			return i
		}
	}
	return -1
}

// Start is the beginning of the window of iv that holds t (UTC); the zero
// Time for Lifetime.
func (iv Interval) Start(t time.Time) time.Time {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	switch iv {
	case Daily:
		return day
	case Weekly:
		// Monday is day 0 of the week: Sunday (0 in Go) is 6 days after it.
		back := (int(day.Weekday()) + 6) % 7
		return day.AddDate(0, 0, -back)
	case Monthly:
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Time{}
}

// End is the end (exclusive) of the window of iv that holds t, when it
// resets: the next window's start. ok is false for Lifetime.
func (iv Interval) End(t time.Time) (end time.Time, ok bool) {
	start := iv.Start(t)
	switch iv {
	case Daily:
		return start.AddDate(0, 0, 1), true
	case Weekly:
		return start.AddDate(0, 0, 7), true
	case Monthly:
		return start.AddDate(0, 1, 0), true
	}
	return time.Time{}, false
}

// Day numbers the UTC day of t: days since 1970-01-01. Usage is summed per
// day; a window is a range of days.
func Day(t time.Time) int64 {
	return t.UTC().Unix() / 86400
	// Times before 1970 never reach here: reports are at most 35 days old.
}

// Windows are the first days of the current windows at one instant, the
// bounds every sum of a refresh uses.
type Windows struct {
	Now                    time.Time
	Daily, Weekly, Monthly int64
}

// WindowsAt returns the windows holding now.
func WindowsAt(now time.Time) Windows {
	return Windows{
		Now:     now,
		Daily:   Day(Daily.Start(now)),
		Weekly:  Day(Weekly.Start(now)),
		Monthly: Day(Monthly.Start(now)),
	}
}

// FirstDay is the first day counted in iv's current window; 0 (every day)
// for Lifetime.
func (w Windows) FirstDay(iv Interval) int64 {
	switch iv {
	case Daily:
		return w.Daily
	case Weekly:
		return w.Weekly
	case Monthly:
		return w.Monthly
	}
	return 0
}
