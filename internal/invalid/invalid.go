// Package invalid is how the domain says what is wrong with a request,
// field by field, in its own words. The HTTP edge alone turns the problems
// into the error envelope (a 400 whose metadata names each field).
package invalid

import (
	"errors"
	"slices"
	"strings"
)

// Field is what is wrong with one field of a request: a body field, a
// query parameter, a part of a form.
type Field struct {
	Name    string
	Problem string
}

// Error is implemented by the domain's errors that name the fields at
// fault.
type Error interface {
	error
	FieldProblems() []Field
}

// Fields returns the field problems err carries (anywhere in its chain),
// or nil.
func Fields(err error) []Field {
	var e Error
	if errors.As(err, &e) {
		return e.FieldProblems()
	}
	return nil
}

// Problems collects field problems; the first problem of a field is the
// one kept. The zero value is ready to use.
type Problems struct {
	list []Field
}

// Add records the problem of name unless name already has one.
func (p *Problems) Add(name, problem string) {
	if !p.Has(name) {
		p.list = append(p.list, Field{Name: name, Problem: problem})
	}
}

// Has reports whether name has a problem.
func (p *Problems) Has(name string) bool {
	return slices.ContainsFunc(p.list, func(f Field) bool { return f.Name == name })
}

// Err returns the problems as an *Problems error, or nil when there are none.
func (p *Problems) Err() error {
	if p == nil || len(p.list) == 0 {
		return nil
	}
	return p
}

func (p *Problems) FieldProblems() []Field { return p.list }

// Error lists the problems, sorted by field, for logs.
func (p *Problems) Error() string {
	parts := make([]string, len(p.list))
	for i, f := range p.list {
		parts[i] = f.Name + ": " + f.Problem
	}
	slices.Sort(parts)
	return "invalid request: " + strings.Join(parts, "; ")
}

// One returns an error naming one field.
func One(name, problem string) error {
	var p Problems
	p.Add(name, problem)
	return &p
}
