package spend

import (
	"testing"
	"time"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestWindowBoundaries(t *testing.T) {
	cases := []struct {
		iv         Interval
		t          string
		start, end string
	}{
		{Daily, "2026-11-24T23:59:59.999Z", "2026-11-24T00:00:00Z", "2026-11-25T00:00:00Z"},
		{Daily, "2026-11-25T00:00:00Z", "2026-11-25T00:00:00Z", "2026-11-26T00:00:00Z"},
		// A time in another zone is counted in its UTC day.
		{Daily, "2026-11-25T01:30:00+02:00", "2026-11-24T00:00:00Z", "2026-11-25T00:00:00Z"},
		// Sunday belongs to the week that began on Monday; Monday starts one.
		{Weekly, "2026-11-29T23:59:59.999Z", "2026-11-23T00:00:00Z", "2026-11-30T00:00:00Z"},
		{Weekly, "2026-11-30T00:00:00Z", "2026-11-30T00:00:00Z", "2026-12-07T00:00:00Z"},
		{Weekly, "2026-11-25T12:00:00Z", "2026-11-23T00:00:00Z", "2026-11-30T00:00:00Z"},
		// A week across a year's end.
		{Weekly, "2027-01-01T00:00:00Z", "2026-12-28T00:00:00Z", "2027-01-04T00:00:00Z"},
		// Month ends, and a leap day.
		{Monthly, "2026-11-30T23:59:59.999Z", "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z"},
		{Monthly, "2026-12-31T23:59:59.999Z", "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{Monthly, "2028-02-29T12:00:00Z", "2028-02-01T00:00:00Z", "2028-03-01T00:00:00Z"},
		{Daily, "2028-02-29T23:59:59.999Z", "2028-02-29T00:00:00Z", "2028-03-01T00:00:00Z"},
		{Monthly, "2027-02-28T23:59:59Z", "2027-02-01T00:00:00Z", "2027-03-01T00:00:00Z"},
	}
	for _, c := range cases {
		tt := at(c.t)
		if got := c.iv.Start(tt); !got.Equal(at(c.start)) {
			t.Errorf("%s.Start(%s) = %s, want %s", c.iv, c.t, got, c.start)
		}
		end, ok := c.iv.End(tt)
		if !ok || !end.Equal(at(c.end)) {
			t.Errorf("%s.End(%s) = %s %v, want %s", c.iv, c.t, end, ok, c.end)
		}
	}
	if _, ok := Lifetime.End(at("2026-11-25T00:00:00Z")); ok {
		t.Error("lifetime has an end")
	}
	if !Lifetime.Start(at("2026-11-25T00:00:00Z")).IsZero() {
		t.Error("lifetime has a start")
	}
}

func TestDayNumbers(t *testing.T) {
	a, b := Day(at("2026-11-24T23:59:59.999Z")), Day(at("2026-11-25T00:00:00Z"))
	if b != a+1 {
		t.Fatalf("days %d and %d are not consecutive", a, b)
	}
	w := WindowsAt(at("2026-11-25T12:00:00Z"))
	if w.Daily != b || w.Weekly != Day(at("2026-11-23T00:00:00Z")) || w.Monthly != Day(at("2026-11-01T00:00:00Z")) || w.FirstDay(Lifetime) != 0 {
		t.Fatalf("windows %+v", w)
	}
}
