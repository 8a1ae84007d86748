package gateway

import (
	"math"
	"testing"
)

func TestQueryInt(t *testing.T) {
	for s, want := range map[string]int{"0": 0, "5": 5, "100": 100, "007": 7} {
		if n, ok := queryInt(s, 0, 100); !ok || n != want {
			t.Errorf("queryInt(%q) = %d, %v; want %d", s, n, ok, want)
		}
	}
	for _, s := range []string{"", "+5", "-1", " 5", "5 ", "5.0", "1e2", "0x5", "101", "99999999999999999999"} {
		if n, ok := queryInt(s, 0, 100); ok {
			t.Errorf("queryInt(%q) = %d, accepted", s, n)
		}
	}
	if n, ok := queryInt("9223372036854775807", 0, math.MaxInt); !ok || n != math.MaxInt {
		t.Errorf("max int: %d %v", n, ok)
	}
}
