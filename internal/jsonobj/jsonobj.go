// Package jsonobj reads a request body that must be one JSON object, strictly:
// encoding/json alone accepts duplicate keys (the last wins), keys that only
// match a field case-insensitively, and data after the document, all of which
// let two readers of one body disagree about what it says.
//
// The document is checked whole by encoding/json (json.Valid) and then cut
// into its members by a small lexer that can trust it: the raw values handed
// out are slices of the body, not copies, and nothing is allocated per
// member but a key that has escapes. A batch of a thousand usage reports is
// read without the garbage json.Decoder makes per token.
package jsonobj

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"unicode/utf8"
)

// Problems of the document itself; a field's own problem is the caller's.
var (
	ErrNotObject = errors.New("must be a JSON object")
	ErrNotArray  = errors.New("must be a JSON array")
	ErrMalformed = errors.New("malformed JSON")
	ErrTrailing  = errors.New("unexpected data after the JSON object")
	ErrEncoding  = errors.New("must be UTF-8 encoded JSON")
)

// DuplicateError names a key given twice.
type DuplicateError struct{ Key string }

func (e *DuplicateError) Error() string { return "duplicate key " + e.Key }

// Walk calls field once per member of the object in body, in order, with
// the member's raw value (numbers keep their text; the slice shares body's
// memory). It returns one of the errors above or *DuplicateError for a
// document it refuses; a malformed document is refused before any member is
// walked, a duplicate key when it is met.
func Walk(body []byte, field func(key string, raw json.RawMessage)) error {
	if !utf8.Valid(body) {
		return ErrEncoding
	}
	start := skipSpace(body, 0)
	if start == len(body) || body[start] != '{' {
		return ErrNotObject
	}
	end, ok := valueEnd(body, start)
	if !ok {
		return ErrMalformed
	}
	if skipSpace(body, end) != len(body) {
		return ErrTrailing
	}
	obj := body[start:end]
	if !json.Valid(obj) {
		return ErrMalformed
	}
	return members(obj, field)
}

// Array returns the elements of the JSON array raw, as slices of it.
func Array(raw json.RawMessage) ([]json.RawMessage, error) {
	if !json.Valid(raw) {
		return nil, ErrMalformed
	}
	var out []json.RawMessage
	err := Elements(raw, func(_ int, v json.RawMessage) bool {
		out = append(out, v)
		return true
	})
	return out, err
}

// Elements calls element with each element of the JSON array raw in turn
// (a slice of raw) and its index, until element returns false. raw must be
// valid JSON, as a member handed out by Walk (or an element by Elements)
// is: it is not checked again. It is Array without collecting the
// elements.
func Elements(raw json.RawMessage, element func(i int, v json.RawMessage) bool) error {
	i := skipSpace(raw, 0)
	if i == len(raw) || raw[i] != '[' {
		return ErrNotArray
	}
	i = skipSpace(raw, i+1)
	if raw[i] == ']' {
		return nil
	}
	for n := 0; ; n++ {
		end, _ := valueEnd(raw, i)
		if !element(n, raw[i:end:end]) {
			return nil
		}
		i = skipSpace(raw, end)
		if raw[i] == ']' {
			return nil
		}
		i = skipSpace(raw, i+1) // past the comma
	}
}

// Members is Walk for raw already checked: a member handed out by Walk or
// an element by Elements. It calls field with each member of the JSON
// object raw, in order, and refuses a key given twice (*DuplicateError) or
// a value that is not an object (ErrNotObject).
func Members(raw []byte, field func(key string, raw json.RawMessage)) error {
	i := skipSpace(raw, 0)
	if i == len(raw) || raw[i] != '{' {
		return ErrNotObject
	}
	return members(raw[i:], field)
}

// members walks the members of obj, a valid JSON object.
func members(obj []byte, field func(key string, raw json.RawMessage)) error {
	var few [8]string
	seen := few[:0] // few keys: a slice beats a map, and these stay on the stack
	var seenMap map[string]bool
	i := skipSpace(obj, 1)
	if obj[i] == '}' {
		return nil
	}
	for {
		keyEnd, _ := valueEnd(obj, i)
		key, err := unquote(obj[i:keyEnd])
		if err != nil {
			return ErrMalformed
		}
		if seenMap != nil {
			if seenMap[key] {
				return &DuplicateError{Key: key}
			}
			seenMap[key] = true
		} else {
			if slices.Contains(seen, key) {
				return &DuplicateError{Key: key}
			}
			if seen = append(seen, key); len(seen) > 32 {
				seenMap = make(map[string]bool, 64)
				for _, k := range seen {
					seenMap[k] = true
				}
			}
		}
		i = skipSpace(obj, skipSpace(obj, keyEnd)+1) // past the colon
		end, _ := valueEnd(obj, i)
		field(key, obj[i:end:end])
		i = skipSpace(obj, end)
		if obj[i] == '}' {
			return nil
		}
		i = skipSpace(obj, i+1) // past the comma
	}
}

// unquote returns the text of the JSON string s (with its quotes).
func unquote(s []byte) (string, error) {
	if len(s) < 2 || s[0] != '"' {
		return "", ErrMalformed
	}
	if bytes.IndexByte(s, '\\') < 0 {
		return string(s[1 : len(s)-1]), nil
	}
	var out string
	err := json.Unmarshal(s, &out)
	return out, err
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace, or len(b).
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// valueEnd returns the index just past the JSON value that starts at b[i],
// and whether it ends within b. It matches brackets and skips strings; it
// does not check what lies between (json.Valid does).
func valueEnd(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				end, ok := stringEnd(b, i)
				if !ok {
					return end, false
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return i, false
	default: // a number or a literal: up to the next delimiter
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i, true
			}
			i++
		}
		return i, true
	}
}

// stringEnd returns the index just past the string starting at b[i] (a
// quote), and whether it is closed.
func stringEnd(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, true
		}
	}
	return i, false
}

// String returns the text of raw when it is a JSON string. raw must be a
// valid JSON value (a member handed out by Walk is); a string without
// escapes is read without encoding/json.
func String(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	s, err := unquote(raw)
	return s, err == nil
}

// Bool returns the value of raw when it is true or false.
func Bool(raw json.RawMessage) (value, ok bool) {
	switch string(raw) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// Number returns the text of raw when it is a JSON number. raw must be a
// valid JSON value, so a value that starts as a number is one.
func Number(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return "", false
	}
	return string(raw), true
}

// IsNull reports whether raw is the JSON literal null.
func IsNull(raw json.RawMessage) bool { return string(raw) == "null" }
