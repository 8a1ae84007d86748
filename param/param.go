// Package param reads the numbers of query parameters the one strict way
// every list of the API shares: decimal digits only (no sign, no space, no
// exponent), within bounds.
package param

import "strconv"

// Int reads s as an integer from lo to hi. "+5", "5.0", " 5" and "0x5" are
// not integers here, whatever strconv would make of them.
func Int(s string, lo, hi int) (int, bool) {
	if s == "" || len(s) > 19 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, false
	}
	return n, true
}
