package jsonobj

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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

func TestWalkEdges(t *testing.T) {
	var got []string
	body := " {\"q\\\"k\" : \"v}]\\\"\" , \"n\":[{\"}\":\"]\"}] ,\"e\":{}, \"z\" :-1.5e3 }\n"
	err := Walk([]byte(body), func(k string, raw json.RawMessage) { got = append(got, k+"="+string(raw)) })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`q"k="v}]\""`, `n=[{"}":"]"}]`, `e={}`, `z=-1.5e3`}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("member %d = %q, want %q", i, got[i], want[i])
		}
	}
	// Past 32 keys the duplicate check changes hands; it still holds.
	var b strings.Builder
	b.WriteString("{")
	for i := range 40 {
		fmt.Fprintf(&b, "%q:%d,", fmt.Sprint("k", i), i)
	}
	b.WriteString(`"k35":0}`)
	var dup *DuplicateError
	if err := Walk([]byte(b.String()), func(string, json.RawMessage) {}); !errors.As(err, &dup) || dup.Key != "k35" {
		t.Errorf("duplicate among many keys: %v", err)
	}
	// The same key spelled with an escape is the same key.
	if err := Walk([]byte(`{"a":1,"\u0061":2}`), func(string, json.RawMessage) {}); !errors.As(err, &dup) || dup.Key != "a" {
		t.Errorf("escaped duplicate: %v", err)
	}
}

func TestArray(t *testing.T) {
	items, err := Array(json.RawMessage(` [ {"a":"]"} , 2,"x",[3] ] `))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"a":"]"}`, "2", `"x"`, "[3]"}
	if len(items) != len(want) {
		t.Fatalf("got %q", items)
	}
	for i := range want {
		if string(items[i]) != want[i] {
			t.Errorf("item %d = %q, want %q", i, items[i], want[i])
		}
	}
	if items, err := Array(json.RawMessage(`[]`)); err != nil || len(items) != 0 {
		t.Errorf("empty array: %q %v", items, err)
	}
	for _, bad := range []string{`{}`, `1`, `"[]"`} {
		if _, err := Array(json.RawMessage(bad)); !errors.Is(err, ErrNotArray) {
			t.Errorf("Array(%s) = %v, want ErrNotArray", bad, err)
		}
	}
	if _, err := Array(json.RawMessage(`[1,]`)); !errors.Is(err, ErrMalformed) {
		t.Errorf("Array([1,]) = %v, want ErrMalformed", err)
	}
}

// FuzzWalk: whatever the body, Walk agrees with encoding/json: it accepts
// exactly the objects encoding/json accepts that have no duplicate key, and
// hands out the members encoding/json decodes, value for value.
func FuzzWalk(f *testing.F) {
	for _, s := range []string{`{"a": 1.50, "b": null, "c": {"x": [1]}}`, `{"a":1,"a":2}`, `{"a":"}"}`, `[]`, `{"a":1} x`, `{"\u00e9":[{}]}`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got := map[string]json.RawMessage{}
		n := 0
		err := Walk(body, func(k string, raw json.RawMessage) { got[k] = raw; n++ })
		var want map[string]json.RawMessage
		jerr := json.Unmarshal(body, &want)
		if err != nil {
			var dup *DuplicateError
			if jerr == nil && want != nil && !errors.As(err, &dup) && !errors.Is(err, ErrEncoding) {
				t.Fatalf("Walk refused %q (%v); encoding/json accepts it", body, err)
			}
			return
		}
		if jerr != nil || want == nil {
			t.Fatalf("Walk accepted %q; encoding/json: %v", body, jerr)
		}
		if n != len(want) || len(got) != len(want) {
			t.Fatalf("%q: %d members walked, encoding/json has %d", body, n, len(want))
		}
		for k, v := range want {
			if !bytes.Equal(bytes.TrimSpace(v), got[k]) {
				t.Fatalf("%q: member %q = %q, encoding/json %q", body, k, got[k], v)
			}
		}
	})
}

func TestScalars(t *testing.T) {
	if s, ok := String(json.RawMessage(`"a\u0042c"`)); !ok || s != "aBc" {
		t.Errorf("String with an escape = %q, %v", s, ok)
	}
	if s, ok := String(json.RawMessage(`"plain"`)); !ok || s != "plain" {
		t.Errorf("String = %q, %v", s, ok)
	}
	for _, raw := range []string{`1`, `null`, `true`, `[]`} {
		if _, ok := String(json.RawMessage(raw)); ok {
			t.Errorf("String(%s) accepted", raw)
		}
	}
	if v, ok := Bool(json.RawMessage(`true`)); !ok || !v {
		t.Error("Bool(true)")
	}
	if v, ok := Bool(json.RawMessage(`false`)); !ok || v {
		t.Error("Bool(false)")
	}
	for _, raw := range []string{`null`, `"true"`, `1`} {
		if _, ok := Bool(json.RawMessage(raw)); ok {
			t.Errorf("Bool(%s) accepted", raw)
		}
	}
	if n, ok := Number(json.RawMessage(`-0.000123`)); !ok || n != "-0.000123" {
		t.Errorf("Number = %q, %v", n, ok)
	}
	for _, raw := range []string{`"1"`, `null`, `true`} {
		if _, ok := Number(json.RawMessage(raw)); ok {
			t.Errorf("Number(%s) accepted", raw)
		}
	}
}

func TestMembers(t *testing.T) {
	var keys []string
	err := Members([]byte(` {"a":1,"b":{"c":[2]}} `), func(k string, v json.RawMessage) { keys = append(keys, k+"="+string(v)) })
	if err != nil || strings.Join(keys, " ") != `a=1 b={"c":[2]}` {
		t.Fatalf("Members = %q, %v", keys, err)
	}
	var dup *DuplicateError
	if err := Members([]byte(`{"a":1,"a":2}`), func(string, json.RawMessage) {}); !errors.As(err, &dup) || dup.Key != "a" {
		t.Errorf("a key given twice: %v", err)
	}
	for _, notObject := range []string{`[]`, `1`, `"x"`, ``, ` `} {
		if err := Members([]byte(notObject), func(string, json.RawMessage) {}); !errors.Is(err, ErrNotObject) {
			t.Errorf("Members(%q) = %v, want ErrNotObject", notObject, err)
		}
	}
}
