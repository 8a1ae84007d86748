package catalog

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrInvalid is wrapped by every error about a catalog file that cannot
	// be used (see LoadError).
	ErrInvalid = errors.New("catalog: invalid catalog")
	// ErrDynamicPrice is returned by Price for router models priced "-1":
	// their price depends on the model the request is routed to.
	ErrDynamicPrice = errors.New("catalog: price depends on the routed model")
	// ErrBadPrice is returned by Price when a model (not one validated by
	// the loader) carries a price or condition it cannot evaluate.
	ErrBadPrice = errors.New("catalog: price cannot be evaluated")
)

// Problem is one reason a catalog file was refused.
type Problem struct {
	// Line is the 1-based line in the file, or 0 when unknown.
	Line int
	// Model is the id of the model concerned, "models[i]" when the entry has
	// no usable id, or "" for problems outside the models list.
	Model string
	// Field is the path of the offending value inside the model (or, for
	// file-level problems, inside the file), e.g. "pricing.overrides[0].utc_end".
	Field string
	// Message says what is wrong.
	Message string
}

// String renders the problem as "line 12: openai/gpt-5: pricing.prompt: message".
func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Model != "" {
		b.WriteString(p.Model)
		b.WriteString(": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// LoadError refuses a catalog file and lists every problem found in it, in
// file order. It unwraps to ErrInvalid. Its text is meant for operators
// (logs, CLI output), not for API clients.
type LoadError struct {
	// Source names the file ("" for catalogs built from bytes).
	Source   string
	Problems []Problem
}

// Error lists all problems, separated by "; ".
func (e *LoadError) Error() string {
	var b strings.Builder
	b.WriteString("catalog")
	if e.Source != "" {
		b.WriteString(" ")
		b.WriteString(e.Source)
	}
	n := len(e.Problems)
	if n == 1 {
		b.WriteString(": 1 problem: ")
	} else {
		fmt.Fprintf(&b, ": %d problems: ", n)
	}
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// Unwrap returns ErrInvalid.
func (e *LoadError) Unwrap() error { return ErrInvalid }

// Strings returns every problem rendered with Problem.String, for logging.
func (e *LoadError) Strings() []string {
	out := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = p.String()
	}
	return out
}
