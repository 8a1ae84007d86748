package seal

import (
	"fmt"
	"log/slog"
	"strings"
)

// Redacted is what a Secret prints in place of its value.
const Redacted = "[REDACTED]"

// Secret is a provider API key in memory. Every way of printing it — fmt
// verbs including %#v and bad verbs, JSON, text encodings, zap and slog —
// shows "[REDACTED]"; the only way to the plaintext is Reveal, so a grep for
// Reveal finds every place the key leaves this type.
//
// The value sits behind a pointer on purpose: fmt prints nested pointers as
// addresses when it falls back to reflection (bad verbs, %d), so not even
// that path can show the key. The zero Secret is empty. Secrets are
// immutable and safe to share between goroutines.
type Secret struct {
	v *string
}

// NewSecret wraps s. Surrounding white space (a newline from a pasted key or
// stdin) is removed, because it is never part of a key and would make the
// provider reject it.
func NewSecret(s string) Secret {
	s = strings.TrimSpace(s)
	if s == "" {
		return Secret{}
	}
	return Secret{v: &s}
}

// Reveal returns the plaintext key. Call it only to put the key on the wire
// or to seal it.
func (s Secret) Reveal() string {
	if s.v == nil {
		return ""
	}
	return *s.v
}

// IsZero reports whether the secret is empty.
func (s Secret) IsZero() bool { return s.v == nil }

// String redacts. zap.Any and zap.Stringer log a Secret through it, and
// zap.Reflect through MarshalJSON.
func (s Secret) String() string {
	if s.IsZero() {
		return ""
	}
	return Redacted
}

// GoString redacts; it is what %#v prints.
func (s Secret) GoString() string { return "seal.Secret(" + `"` + s.String() + `"` + ")" }

// Format redacts for every verb, including those fmt would otherwise print
// through reflection.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = f.Write([]byte(s.GoString()))
		return
	}
	_, _ = f.Write([]byte(s.String()))
}

// MarshalJSON redacts.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + s.String() + `"`), nil }

// MarshalText redacts (YAML, XML and map keys use it).
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// LogValue redacts in log/slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }
