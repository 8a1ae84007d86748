package money

import (
	"errors"
	"math"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in   string
		want Micros
		err  error
	}{
		{"0", 0, nil},
		{"1", 1_000_000, nil},
		{"12.5", 12_500_000, nil},
		{"0.000001", 1, nil},
		{"0.0000010", 1, nil},
		{"-3.25", -3_250_000, nil},
		{"1e2", 100_000_000, nil},
		{"1.5E-6", 0, ErrPrecision},
		{"15e-7", 1, ErrPrecision},
		{"1e-6", 1, nil},
		{"0.0000001", 0, ErrPrecision},
		{"9223372036854.775807", math.MaxInt64, nil},
		{"9223372036854.775808", 0, ErrRange},
		{"1e40", 0, ErrRange},
		{"", 0, ErrSyntax},
		{"-", 0, ErrSyntax},
		{"1.", 0, ErrSyntax},
		{".5", 0, ErrSyntax},
		{"1e", 0, ErrSyntax},
		{"0x10", 0, ErrSyntax},
		{"1_000", 0, ErrSyntax},
	}
	for _, c := range cases {
		got, err := Parse(c.in)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("Parse(%q) = %v, %v; want error %v", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", c.in, int64(got), err, int64(c.want))
		}
	}
}

func TestString(t *testing.T) {
	cases := map[Micros]string{
		0: "0", 1: "0.000001", 1_000_000: "1", 12_500_000: "12.5", -3_250_000: "-3.25",
		math.MaxInt64: "9223372036854.775807", math.MinInt64: "-9223372036854.775808",
	}
	for in, want := range cases {
		if got := in.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int64(in), got, want)
		}
		if in == math.MinInt64 {
			continue
		}
		back, err := Parse(want)
		if err != nil || back != in {
			t.Errorf("Parse(%q) = %d, %v; want %d", want, back, err, in)
		}
	}
}

// Exact sums: a million reports of 0.000001 make exactly 1 dollar, where
// float64 would not.
func TestSumsAreExact(t *testing.T) {
	var sum Micros
	for range 1_000_000 {
		var ok bool
		if sum, ok = sum.Add(1); !ok {
			t.Fatal("overflow")
		}
	}
	if sum.String() != "1" {
		t.Fatalf("sum = %s, want 1", sum)
	}
	if _, ok := Micros(math.MaxInt64).Add(1); ok {
		t.Fatal("MaxInt64+1 did not report overflow")
	}
	if _, ok := Micros(math.MinInt64).Add(-1); ok {
		t.Fatal("MinInt64-1 did not report overflow")
	}
}
