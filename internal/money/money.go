// Package money holds amounts of US dollars exactly, to the millionth: the
// precision of a usage report. Sums of reported costs must not drift the way
// binary floating point does, so an amount is an integer count of micro-USD.
package money

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// Micros is an amount in millionths of a US dollar.
type Micros int64

// Scale is the number of decimals an amount keeps.
const Scale = 6

const perDollar = 1_000_000

// Errors of Parse.
var (
	ErrSyntax    = errors.New("not a decimal number")
	ErrPrecision = errors.New("more than 6 decimals")
	ErrRange     = errors.New("out of range")
)

// Parse reads a JSON number (or its text) as an amount: an optional minus
// sign, digits, an optional fraction of at most Scale digits, an optional
// exponent. "1e-7" is ErrPrecision rather than rounded: an amount is never
// changed silently.
func Parse(s string) (Micros, error) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil || i+1 == len(s) {
			return 0, ErrSyntax
		}
		if e > 30 || e < -30 {
			return 0, ErrRange
		}
		mant, exp = s[:i], e
	}
	whole, frac, _ := strings.Cut(mant, ".")
	if whole == "" || !digits(whole) || (strings.Contains(mant, ".") && (frac == "" || !digits(frac))) {
		return 0, ErrSyntax
	}
	// Shift the decimal point by the exponent, then require what lies
	// right of the sixth decimal to be zeros.
	all := whole + frac
	point := len(whole) + exp
	if point < 0 {
		all = strings.Repeat("0", -point) + all
		point = 0
	}
	for len(all) < point+Scale {
		all += "0"
	}
	if strings.Trim(all[point+Scale:], "0") != "" {
		return 0, ErrPrecision
	}
	units := strings.TrimLeft(all[:point+Scale], "0")
	if units == "" {
		return 0, nil
	}
	if len(units) > 19 {
		return 0, ErrRange
	}
	v, err := strconv.ParseInt(units, 10, 64)
	if err != nil {
		return 0, ErrRange
	}
	if neg {
		v = -v
	}
	return Micros(v), nil
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// String is the amount in dollars with trailing fraction zeros dropped:
// "0", "12.5", "0.000001", "-3".
func (m Micros) String() string {
	return string(m.AppendText(nil))
}

// AppendText appends String's form to b.
func (m Micros) AppendText(b []byte) []byte {
	u := uint64(m)
	if m < 0 {
		b = append(b, '-')
		u = uint64(-m)
		if m == math.MinInt64 {
			u = 1 << 63
		}
	}
	b = strconv.AppendUint(b, u/perDollar, 10)
	frac := u % perDollar
	if frac == 0 {
		return b
	}
	var digits [Scale]byte
	for i := Scale - 1; i >= 0; i-- {
		digits[i] = byte('0' + frac%10)
		frac /= 10
	}
	n := Scale
	for digits[n-1] == '0' {
		n--
	}
	b = append(b, '.')
	return append(b, digits[:n]...)
}

// MarshalJSON writes the amount as a JSON number.
func (m Micros) MarshalJSON() ([]byte, error) { return m.AppendText(nil), nil }

// Add returns m+n, or ok false when the sum overflows.
func (m Micros) Add(n Micros) (sum Micros, ok bool) {
	s := m + n
	if (n > 0 && s < m) || (n < 0 && s > m) {
		return 0, false
	}
	return s, true
}
