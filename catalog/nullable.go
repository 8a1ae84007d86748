package catalog

import (
	"bytes"
	"encoding/json"
)

// Nullable is an optional field that may also be null, so that the three
// states of the wire format survive a decode and re-encode unchanged:
//
//   - absent: the zero value; omitted from JSON by the `omitzero` tag option,
//   - null: present and null (see Null),
//   - a value (see Some).
//
// A Nullable is a small value type; copy it freely.
type Nullable[T any] struct {
	value   T
	present bool // the key is present (null or a value)
	valid   bool // present and not null
}

// Some returns a Nullable holding v.
func Some[T any](v T) Nullable[T] { return Nullable[T]{value: v, present: true, valid: true} }

// Null returns a Nullable that is present and null.
func Null[T any]() Nullable[T] { return Nullable[T]{present: true} }

// Get returns the value and true, or the zero value and false when the field
// is absent or null.
func (n Nullable[T]) Get() (T, bool) { return n.value, n.valid }

// IsNull reports whether the field is present and null.
func (n Nullable[T]) IsNull() bool { return n.present && !n.valid }

// IsZero reports whether the field is absent; encoding/json calls it for the
// `omitzero` tag option.
func (n Nullable[T]) IsZero() bool { return !n.present }

// MarshalJSON encodes null or the value. An absent Nullable is omitted by
// `omitzero` before this is called; marshalled on its own it is null.
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	if !n.valid {
		return []byte("null"), nil
	}
	return json.Marshal(n.value)
}

// UnmarshalJSON decodes null or a value; a key that is absent from the input
// never reaches it and so stays absent.
func (n *Nullable[T]) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*n = Null[T]()
		return nil
	}
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*n = Some(v)
	return nil
}
