package invalid

import (
	"errors"
	"fmt"
	"testing"
)

func TestProblems(t *testing.T) {
	var p Problems
	if p.Err() != nil {
		t.Fatal("no problems, but an error")
	}
	p.Add("b", "first")
	p.Add("a", "only")
	p.Add("b", "second")
	err := p.Err()
	if err == nil {
		t.Fatal("problems, but no error")
	}
	want := []Field{{"b", "first"}, {"a", "only"}}
	got := Fields(fmt.Errorf("wrapped: %w", err))
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Fields = %v, want %v (first problem of a field kept, in order)", got, want)
	}
	if s := err.Error(); s != "invalid request: a: only; b: first" {
		t.Errorf("Error() = %q", s)
	}
	if Fields(errors.New("plain")) != nil {
		t.Error("a plain error has field problems")
	}
	if f := Fields(One("limit", "too big")); len(f) != 1 || f[0] != (Field{"limit", "too big"}) {
		t.Errorf("One: %v", f)
	}
}
