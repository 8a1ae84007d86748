package providers

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// jsonReader decodes the providers' file records: a page of up to 1000 of
// them on every passthrough list, where encoding/json's reflection cost
// more than the rest of the call together. It refuses what encoding/json
// refuses, and sets each field as encoding/json would set the same Go type
// (a repeated member sets it again, null leaves a string, number or bool
// as it was and makes a pointer nil, keys match without regard to case);
// FuzzDecoders holds it to that. A string without escapes is a slice of
// one copy of the document, so a page costs a few allocations, not a few
// per record.
type jsonReader struct {
	data  []byte // the document
	src   string // the same bytes, copied once, for the strings decoded
	i     int    // next byte
	depth int    // objects and arrays open
}

// maxJSONDepth is encoding/json's nesting limit.
const maxJSONDepth = 10000

// Errors of jsonReader: errJSONSyntax for a document encoding/json would
// not parse, errJSONType for a value it would not store in the field's
// type.
var (
	errJSONSyntax = errors.New("invalid JSON")
	errJSONType   = errors.New("JSON value of the wrong type")
)

func newJSONReader(data []byte) *jsonReader {
	return &jsonReader{data: data, src: string(data)}
}

// end checks nothing but space follows the document's value.
func (r *jsonReader) end() error {
	if r.skipSpace(); r.i != len(r.data) {
		return r.syntaxError()
	}
	return nil
}

func (r *jsonReader) syntaxError() error {
	return fmt.Errorf("%w at offset %d", errJSONSyntax, r.i)
}

func (r *jsonReader) typeError(want string) error {
	return fmt.Errorf("%w at offset %d: want %s", errJSONType, r.i, want)
}

func (r *jsonReader) skipSpace() {
	for r.i < len(r.data) && r.data[r.i] <= ' ' {
		switch r.data[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// peek returns the first byte of the next value or delimiter, 0 at the end
// (a NUL is never valid there either).
func (r *jsonReader) peek() byte {
	if r.i < len(r.data) && r.data[r.i] > ' ' {
		return r.data[r.i]
	}
	r.skipSpace()
	if r.i < len(r.data) {
		return r.data[r.i]
	}
	return 0
}

// An object is read member by member: r.object, then for each member
// r.key, its value, and r.next('}'), which says whether another follows
// (members does that); an array likewise, with r.array and r.next(']').

// object reads the start of an object and reports whether a member follows.
// null reads as an object without members, as encoding/json leaves a
// struct alone.
func (r *jsonReader) object() (more bool, err error) {
	switch r.peek() {
	case 'n':
		return false, r.literal("null")
	case '{':
		return r.open('}')
	}
	return false, r.typeError("an object")
}

// array reads the start of an array and reports whether an element
// follows; null is reported, for the caller to decide what it means.
func (r *jsonReader) array() (more, null bool, err error) {
	switch r.peek() {
	case 'n':
		return false, true, r.literal("null")
	case '[':
		more, err := r.open(']')
		return more, false, err
	}
	return false, false, r.typeError("an array")
}

// open enters the object or array at r.i and reports whether it has a
// member or an element.
func (r *jsonReader) open(closing byte) (bool, error) {
	r.i++
	if r.depth++; r.depth > maxJSONDepth {
		return false, fmt.Errorf("%w: nested deeper than %d", errJSONSyntax, maxJSONDepth)
	}
	if r.peek() == closing {
		r.i++
		r.depth--
		return false, nil
	}
	return true, nil
}

// next reads what follows a member or an element: a comma (another one
// follows) or the closing bracket.
func (r *jsonReader) next(closing byte) (bool, error) {
	switch r.peek() {
	case ',':
		r.i++
		return true, nil
	case closing:
		r.i++
		r.depth--
		return false, nil
	}
	return false, r.syntaxError()
}

// key reads a member's key, unescaped, and the colon after it.
func (r *jsonReader) key() (string, error) {
	if r.peek() != '"' {
		return "", r.syntaxError()
	}
	key, err := r.str()
	if err != nil {
		return "", err
	}
	if r.peek() != ':' {
		return "", r.syntaxError()
	}
	r.i++
	return key, nil
}

// skip reads any value and drops it.
func (r *jsonReader) skip() error {
	switch c := r.peek(); {
	case c == '{':
		more, err := r.object()
		for more && err == nil {
			if _, err = r.key(); err == nil {
				if err = r.skip(); err == nil {
					more, err = r.next('}')
				}
			}
		}
		return err
	case c == '[':
		more, _, err := r.array()
		for more && err == nil {
			if err = r.skip(); err == nil {
				more, err = r.next(']')
			}
		}
		return err
	case c == '"':
		_, _, err := r.scanString()
		return err
	case c == 't':
		return r.literal("true")
	case c == 'f':
		return r.literal("false")
	case c == 'n':
		return r.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		_, err := r.number()
		return err
	}
	return r.syntaxError()
}

// raw reads any value and returns its bytes, for a type that decodes
// itself (encoding/json hands such a type the bytes of whatever value is
// there). They are the document's: valid only while it is.
func (r *jsonReader) raw() ([]byte, error) {
	r.skipSpace()
	start := r.i
	if err := r.skip(); err != nil {
		return nil, err
	}
	return r.data[start:r.i], nil
}

func (r *jsonReader) literal(lit string) error {
	if !strings.HasPrefix(r.src[r.i:], lit) {
		return r.syntaxError()
	}
	r.i += len(lit)
	return nil
}

// number reads a number as JSON writes them and returns it as written.
func (r *jsonReader) number() (string, error) {
	start := r.i
	digits := func() int {
		n := 0
		for r.i < len(r.data) && '0' <= r.data[r.i] && r.data[r.i] <= '9' {
			r.i++
			n++
		}
		return n
	}
	if r.i < len(r.data) && r.data[r.i] == '-' {
		r.i++
	}
	switch {
	case r.i < len(r.data) && r.data[r.i] == '0':
		r.i++
	case digits() == 0:
		return "", r.syntaxError()
	}
	if r.i < len(r.data) && r.data[r.i] == '.' {
		r.i++
		if digits() == 0 {
			return "", r.syntaxError()
		}
	}
	if r.i < len(r.data) && (r.data[r.i] == 'e' || r.data[r.i] == 'E') {
		r.i++
		if r.i < len(r.data) && (r.data[r.i] == '+' || r.data[r.i] == '-') {
			r.i++
		}
		if digits() == 0 {
			return "", r.syntaxError()
		}
	}
	return r.src[start:r.i], nil
}

// plainByte marks the bytes a string holds as they are: not the closing
// quote, an escape, a control character or part of a multi-byte rune.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanString reads a string up to its closing quote and returns where its
// content starts and whether it can be taken as it is: no escapes and
// valid UTF-8 (encoding/json replaces invalid bytes).
func (r *jsonReader) scanString() (start int, plain bool, err error) {
	start = r.i + 1
	plain, ascii := true, true
	i := start
	for {
		for i < len(r.data) && plainByte[r.data[i]] {
			i++
		}
		if i == len(r.data) {
			r.i = i
			return 0, false, r.syntaxError()
		}
		switch c := r.data[i]; {
		case c == '"':
			r.i = i + 1
			return start, plain && (ascii || utf8.Valid(r.data[start:i])), nil
		case c == '\\':
			plain = false
			if i++; i == len(r.data) {
				r.i = i
				return 0, false, r.syntaxError()
			}
			switch r.data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				for range 4 {
					if i++; i == len(r.data) || !isHex(r.data[i]) {
						r.i = i
						return 0, false, r.syntaxError()
					}
				}
			default:
				r.i = i
				return 0, false, r.syntaxError()
			}
		case c < 0x20:
			r.i = i
			return 0, false, r.syntaxError()
		default: // c >= utf8.RuneSelf
			ascii = false
		}
		i++
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// str reads a string (the reader is at its opening quote).
func (r *jsonReader) str() (string, error) {
	// Most strings are plain ASCII up to their closing quote.
	start, i := r.i+1, r.i+1
	for i < len(r.data) && plainByte[r.data[i]] {
		i++
	}
	if i < len(r.data) && r.data[i] == '"' {
		r.i = i + 1
		return r.src[start:i], nil
	}
	start, plain, err := r.scanString()
	if err != nil {
		return "", err
	}
	if plain {
		return r.src[start : r.i-1], nil
	}
	// Escapes or invalid UTF-8, which no provider sends in a file record:
	// encoding/json decodes them.
	var s string
	if err := json.Unmarshal(r.data[start-1:r.i], &s); err != nil {
		return "", err
	}
	return s, nil
}

// setString reads a string into *dst; null leaves it.
func (r *jsonReader) setString(dst *string) error {
	switch r.peek() {
	case '"':
		s, err := r.str()
		*dst = s
		return err
	case 'n':
		return r.literal("null")
	}
	return r.typeError("a string")
}

// setInt64 reads an integer into *dst; null leaves it. set, if not nil, says
// whether *dst holds a number: it is what a *int64 field being non-nil
// says, null making it false.
func (r *jsonReader) setInt64(dst *int64, set *bool) error {
	switch c := r.peek(); {
	case c == 'n':
		if set != nil {
			*dst, *set = 0, false
		}
		return r.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		s, err := r.number()
		if err != nil {
			return err
		}
		n, ok := smallInt(s)
		if !ok {
			if n, err = strconv.ParseInt(s, 10, 64); err != nil {
				return r.typeError("an int64")
			}
		}
		*dst = n
		if set != nil {
			*set = true
		}
		return nil
	}
	return r.typeError("a number")
}

// smallInt reads a number of at most 18 digits without a fraction or an
// exponent (an int64 holds any), and says whether s was one.
func smallInt(s string) (int64, bool) {
	digits := s
	if len(s) > 0 && s[0] == '-' {
		digits = s[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if len(digits) < len(s) {
		n = -n
	}
	return n, true
}

// setBool reads true or false into *dst; null leaves it. set is as setInt64's.
func (r *jsonReader) setBool(dst *bool, set *bool) error {
	switch r.peek() {
	case 't':
		*dst = true
	case 'f':
		*dst = false
	case 'n':
		if set != nil {
			*dst, *set = false, false
		}
		return r.literal("null")
	default:
		return r.typeError("a boolean")
	}
	if set != nil {
		*set = true
	}
	if *dst {
		return r.literal("true")
	}
	return r.literal("false")
}

// setTime reads a time as encoding/json does: time.Time decodes whatever
// value is there (an RFC 3339 string; null leaves it).
func (r *jsonReader) setTime(dst *time.Time) error {
	raw, err := r.raw()
	if err != nil {
		return err
	}
	return dst.UnmarshalJSON(raw)
}

// foldedName returns the name of names that key equals without regard to
// case, as encoding/json matches keys that are no field's exact name; ""
// when none does.
func foldedName(key string, names []string) string {
	ascii := true
	for i := 0; i < len(key); i++ {
		if key[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	for _, n := range names {
		// An ASCII key can only equal an ASCII name of its length.
		if (!ascii || len(n) == len(key)) && strings.EqualFold(key, n) {
			return n
		}
	}
	return ""
}

// elements reads an array into *s as encoding/json reads one into a slice
// through a pointer to it: element i is read by read into (*s)[i], over
// what a former array of the same member left there; the slice ends at
// the last element read. null and [] start afresh: *s is emptied and its
// spare capacity cleared. present says an array was read, not null.
func elements[E any](r *jsonReader, s *[]E, read func(e *E, r *jsonReader) error) (present bool, err error) {
	more, null, err := r.array()
	i := 0
	for more && err == nil {
		switch {
		case i == cap(*s):
			var zero E
			*s = append(*s, zero)
		case i >= len(*s):
			*s = (*s)[:i+1]
		}
		if err = read(&(*s)[i], r); err == nil {
			more, err = r.next(']')
		}
		i++
	}
	switch {
	case err != nil:
		return false, err
	case i == 0:
		clear((*s)[:cap(*s)])
		*s = (*s)[:0]
		return !null, nil
	}
	*s = (*s)[:i]
	return true, nil
}

// members reads an object into t, handing each member's key to member,
// which reads the member's value if it knows that name and says whether it
// did. A key member does not know is tried again as the one of names (the
// names member knows) it equals without regard to case, as encoding/json
// matches keys; the value of a key still unknown is skipped.
func members[T any](r *jsonReader, t *T, names []string, member func(t *T, r *jsonReader, key string) (known bool, err error)) error {
	more, err := r.object()
	for more && err == nil {
		var key string
		if key, err = r.key(); err != nil {
			return err
		}
		var known bool
		if known, err = member(t, r, key); !known && err == nil {
			if name := foldedName(key, names); name != "" {
				known, err = member(t, r, name)
			}
			if !known && err == nil {
				err = r.skip()
			}
		}
		if err == nil {
			more, err = r.next('}')
		}
	}
	return err
}

// recordPool keeps the slices a list's records are read into, for the next
// list: a page is then read without growing one, element by element.
type recordPool[E any] struct{ pool sync.Pool }

// get returns an empty slice, its spare capacity zero.
func (p *recordPool[E]) get() *[]E {
	if s, ok := p.pool.Get().(*[]E); ok {
		return s
	}
	return new([]E)
}

// put clears s, so that nothing it held is kept alive, and keeps it unless
// it is larger than a page.
func (p *recordPool[E]) put(s *[]E) {
	if cap(*s) > maxListLimit {
		return
	}
	clear((*s)[:cap(*s)])
	*s = (*s)[:0]
	p.pool.Put(s)
}
