package jsonobj

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestWalk(t *testing.T) {
	var got []string
	err := Walk([]byte(`{"a": 1.50, "b": null, "c": {"x": [1]}}`), func(k string, raw json.RawMessage) {
		got = append(got, k+"="+string(raw))
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a=1.50", "b=null", `c={"x": [1]}`}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("member %d = %q, want %q", i, got[i], want[i])
		}
	}
}

func TestWalkRefuses(t *testing.T) {
	cases := map[string]error{
		`[]`:               ErrNotObject,
		``:                 ErrNotObject,
		`"x"`:              ErrNotObject,
		`{"a":}`:           ErrMalformed,
		`{"a":1`:           ErrMalformed,
		`{"a":1} {}`:       ErrTrailing,
		`{"a":1} x`:        ErrTrailing,
		"{\"a\":\"\xff\"}": ErrEncoding,
	}
	for body, want := range cases {
		if err := Walk([]byte(body), func(string, json.RawMessage) {}); !errors.Is(err, want) {
			t.Errorf("Walk(%q) = %v, want %v", body, err, want)
		}
	}
	var dup *DuplicateError
	if err := Walk([]byte(`{"a":1,"a":2}`), func(string, json.RawMessage) {}); !errors.As(err, &dup) || dup.Key != "a" {
		t.Errorf("duplicate: got %v", err)
	}
}
