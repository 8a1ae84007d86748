// Package jsonobj reads a request body that must be one JSON object, strictly:
// encoding/json alone accepts duplicate keys (the last wins), keys that only
// match a field case-insensitively, and data after the document, all of which
// let two readers of one body disagree about what it says.
package jsonobj

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"unicode/utf8"
)

// Problems of the document itself; a field's own problem is the caller's.
var (
	ErrNotObject = errors.New("must be a JSON object")
	ErrMalformed = errors.New("malformed JSON")
	ErrTrailing  = errors.New("unexpected data after the JSON object")
	ErrEncoding  = errors.New("must be UTF-8 encoded JSON")
)

// DuplicateError names a key given twice.
type DuplicateError struct{ Key string }

func (e *DuplicateError) Error() string { return "duplicate key " + e.Key }

// Walk calls field once per member of the object in body, in order, with
// the member's raw value (numbers keep their text). It stops at the first
// problem of the document, returning one of the errors above or
// *DuplicateError; the members before it have been walked.
func Walk(body []byte, field func(key string, raw json.RawMessage)) error {
	if !utf8.Valid(body) {
		return ErrEncoding
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ErrNotObject
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return ErrMalformed
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return ErrMalformed
		}
		if seen[key] {
			return &DuplicateError{Key: key}
		}
		seen[key] = true
		field(key, raw)
	}
	if _, err := dec.Token(); err != nil {
		return ErrMalformed
	}
	if _, err := dec.Token(); err != io.EOF {
		return ErrTrailing
	}
	return nil
}

// IsNull reports whether raw is the JSON literal null.
func IsNull(raw json.RawMessage) bool { return string(raw) == "null" }
