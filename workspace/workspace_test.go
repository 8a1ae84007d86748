package workspace

import (
	"encoding/json"
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/aigateway/gateway/internal/invalid"
)

func ptr[T any](v T) *T { return &v }

func set[T any](v T) Optional[T] { return Optional[T]{Set: true, Value: v} }

// named returns the fields p names, sorted, and fails the test where a
// field is named with a problem other than want's (when want gives one).
func named(t *testing.T, p *invalid.Problems, want map[string]string) []string {
	t.Helper()
	var names []string
	for _, f := range p.FieldProblems() {
		names = append(names, f.Name)
		if w, ok := want[f.Name]; ok && w != "" && w != f.Problem {
			t.Errorf("%s: %q, want %q", f.Name, f.Problem, w)
		}
	}
	sort.Strings(names)
	return names
}

func TestCheckCreate(t *testing.T) {
	svc, _, _ := newTestService("x/y", "x/z")
	tests := []struct {
		name string
		req  CreateRequest
		want map[string]string // field -> problem ("" any); none means valid
	}{
		{"minimal", CreateRequest{Name: ptr("A"), Slug: ptr("a")}, nil},
		{"all fields", CreateRequest{Name: ptr("A"), Slug: ptr("a-1"), Description: ptr("d"), DefaultTextModel: ptr("x/y"),
			DefaultImageModel: ptr("x/z"), DefaultProviderSort: ptr("price"), IOLoggingAPIKeyIDs: []string{"k1"},
			IOLoggingSamplingRate: ptr(0.5), IsDataDiscountLoggingEnabled: ptr(false), IsObservabilityBroadcastEnabled: ptr(true),
			IsObservabilityIOLoggingEnabled: ptr(true)}, nil},
		{"100 multi-byte characters", CreateRequest{Name: ptr(strings.Repeat("é", 100)), Slug: ptr("a")}, nil},
		{"101 characters", CreateRequest{Name: ptr(strings.Repeat("é", 101)), Slug: ptr("a")},
			map[string]string{"name": "must be 1 to 100 characters"}},
		{"empty name", CreateRequest{Name: ptr(""), Slug: ptr("a")}, map[string]string{"name": "must be 1 to 100 characters"}},
		{"blank name", CreateRequest{Name: ptr("  "), Slug: ptr("a")}, map[string]string{"name": "must not be blank"}},
		{"control character", CreateRequest{Name: ptr("a\u0007"), Slug: ptr("a")}, map[string]string{"name": "must not contain control characters"}},
		{"line separator", CreateRequest{Name: ptr("a\u2028b"), Slug: ptr("a")}, map[string]string{"name": "must not contain control characters"}},
		{"bidi override", CreateRequest{Name: ptr("Prod\u202e"), Slug: ptr("a")}, map[string]string{"name": "must not contain bidirectional control characters"}},
		{"zero-width space", CreateRequest{Name: ptr("Pro\u200bd"), Slug: ptr("a")}, map[string]string{"name": "must not contain invisible formatting characters"}},
		{"right-to-left text", CreateRequest{Name: ptr("שלום"), Slug: ptr("a")}, nil},
		{"not UTF-8", CreateRequest{Name: ptr("\xff"), Slug: ptr("a")}, map[string]string{"name": "must be valid UTF-8"}},
		{"missing both", CreateRequest{}, map[string]string{"name": "required", "slug": "required"}},
		{"look-alike slug", CreateRequest{Name: ptr("A"), Slug: ptr("аbc")}, map[string]string{"slug": ""}},
		{"double hyphen", CreateRequest{Name: ptr("A"), Slug: ptr("a--b")}, map[string]string{"slug": ""}},
		{"51-character slug", CreateRequest{Name: ptr("A"), Slug: ptr(strings.Repeat("s", 51))}, map[string]string{"slug": ""}},
		{"501-character description", CreateRequest{Name: ptr("A"), Slug: ptr("a"), Description: ptr(strings.Repeat("ü", 501))},
			map[string]string{"description": "must be at most 500 characters"}},
		{"sort", CreateRequest{Name: ptr("A"), Slug: ptr("a"), DefaultProviderSort: ptr("Price")},
			map[string]string{"default_provider_sort": "must be one of price, throughput, latency, exacto"}},
		{"rate out of range", CreateRequest{Name: ptr("A"), Slug: ptr("a"), IOLoggingSamplingRate: ptr(0.0)},
			map[string]string{"io_logging_sampling_rate": "must be between 0.0001 and 1"}},
		{"rate NaN", CreateRequest{Name: ptr("A"), Slug: ptr("a"), IOLoggingSamplingRate: ptr(math.NaN())},
			map[string]string{"io_logging_sampling_rate": ""}},
		{"empty key id", CreateRequest{Name: ptr("A"), Slug: ptr("a"), IOLoggingAPIKeyIDs: []string{"k", ""}},
			map[string]string{"io_logging_api_key_ids": "entries must be 1 to 128 bytes"}},
		{"too many key ids", CreateRequest{Name: ptr("A"), Slug: ptr("a"), IOLoggingAPIKeyIDs: make([]string, 1001)},
			map[string]string{"io_logging_api_key_ids": "must have at most 1000 entries"}},
		{"unknown models", CreateRequest{Name: ptr("A"), Slug: ptr("a"), DefaultTextModel: ptr("no/such"), DefaultImageModel: ptr("x/y")},
			map[string]string{"default_text_model": "is not a model the catalog serves"}},
		{"every problem at once", CreateRequest{Name: ptr(""), DefaultImageModel: ptr("no/such")},
			map[string]string{"name": "", "slug": "required", "default_image_model": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p invalid.Problems
			svc.CheckCreate(tt.req, &p)
			var want []string
			for f := range tt.want {
				want = append(want, f)
			}
			sort.Strings(want)
			if got := named(t, &p, tt.want); !reflect.DeepEqual(got, want) {
				t.Errorf("named %v, want %v", got, want)
			}
		})
	}
}

// A problem already found (by the edge, decoding the body) is the one a
// field keeps; the check adds the others.
func TestCheckKeepsTheProblemsFoundBefore(t *testing.T) {
	svc, _, _ := newTestService()
	var p invalid.Problems
	p.Add("name", "must be a string")
	svc.CheckCreate(CreateRequest{Slug: ptr("Bad")}, &p)
	if got := named(t, &p, map[string]string{"name": "must be a string"}); !reflect.DeepEqual(got, []string{"name", "slug"}) {
		t.Errorf("named %v", got)
	}
}

func TestCheckUpdate(t *testing.T) {
	svc, _, _ := newTestService("x/y")
	tests := []struct {
		name string
		u    UpdateRequest
		want []string
	}{
		{"nothing", UpdateRequest{}, nil},
		{"nothing is required", UpdateRequest{Description: set[*string](nil)}, nil},
		{"nulls clear", UpdateRequest{DefaultTextModel: set[*string](nil), DefaultProviderSort: set[*string](nil),
			IOLoggingAPIKeyIDs: set[[]string](nil)}, nil},
		{"values", UpdateRequest{Name: set("N"), DefaultProviderSort: set(ptr("latency")), IOLoggingSamplingRate: set(1.0),
			DefaultTextModel: set(ptr("x/y"))}, nil},
		{"creation limits apply", UpdateRequest{Name: set(""), Slug: set("Bad"), IOLoggingSamplingRate: set(2.0),
			DefaultProviderSort: set(ptr("fast"))}, []string{"default_provider_sort", "io_logging_sampling_rate", "name", "slug"}},
		{"unknown model", UpdateRequest{DefaultTextModel: set(ptr("no/such")), DefaultImageModel: set[*string](nil)},
			[]string{"default_text_model"}},
		{"501-character description", UpdateRequest{Description: set(ptr(strings.Repeat("d", 501)))}, []string{"description"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p invalid.Problems
			svc.CheckUpdate(tt.u, &p)
			if got := named(t, &p, nil); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("named %v, want %v", got, tt.want)
			}
		})
	}
}

// The fingerprints of idempotent requests are compared with records
// written by earlier versions: the encoding of the requests must not
// change (these are the hashes an earlier version made of the same
// requests).
func TestRequestHashIsStable(t *testing.T) {
	create := CreateRequest{Name: ptr("A"), Slug: ptr("a"), DefaultTextModel: ptr("x/y"), IOLoggingSamplingRate: ptr(0.5),
		IsDataDiscountLoggingEnabled: ptr(false), IOLoggingAPIKeyIDs: []string{}}
	if got := requestHash(create); got != "dc78413f5ebb72fde4d16396cfb1507faca99588b34b3f2de597a3a6e7d8bb8d" {
		t.Errorf("creation hash %s has changed", got)
	}
	update := struct {
		Ref     Ref
		Request UpdateRequest
	}{Ref{Slug: "old"}, UpdateRequest{Slug: set("new"), Description: set(ptr("d")), DefaultImageModel: set[*string](nil)}}
	if got := requestHash(update); got != "a0f5e55416ea93fdb38e7f01801f23de5a1b8084975b93b7cf1a5f8694098fe1" {
		t.Errorf("update hash %s has changed", got)
	}
	if b, _ := json.Marshal(CreateRequest{Name: ptr("A"), Slug: ptr("a")}); string(b) != `{"name":"A","slug":"a","io_logging_api_key_ids":null}` {
		t.Errorf("a creation encodes as %s", b)
	}
}

func TestParseRef(t *testing.T) {
	tests := []struct {
		in   string
		want Ref
		ok   bool
	}{
		{"team-a", Ref{Slug: "team-a"}, true},
		{"0190A0B1-2C3D-7E4F-8A9B-0C1D2E3F4A5B", Ref{ID: "0190A0B1-2C3D-7E4F-8A9B-0C1D2E3F4A5B"}, true},
		{"0190a0b1-2c3d-7e4f-8a9b-0c1d2e3f4a5b", Ref{ID: "0190a0b1-2c3d-7e4f-8a9b-0c1d2e3f4a5b", Slug: "0190a0b1-2c3d-7e4f-8a9b-0c1d2e3f4a5b"}, true},
		{"{0190a0b1-2c3d-7e4f-8a9b-0c1d2e3f4a5b}", Ref{}, false},
		{"Team A", Ref{}, false},
		{"", Ref{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := ParseRef(tt.in)
			if got != tt.want || ok != tt.ok {
				t.Errorf("ParseRef(%q) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}
