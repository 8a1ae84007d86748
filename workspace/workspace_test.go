package workspace

import (
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func TestParseCreateRequest(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		fields []string // offending fields; none means valid
	}{
		{"minimal", `{"name":"A","slug":"a"}`, nil},
		{"all fields", `{"name":"A","slug":"a-1","description":"d","default_text_model":"x/y","default_image_model":"x/z",
			"default_provider_sort":"price","io_logging_api_key_ids":["k1"],"io_logging_sampling_rate":0.5,
			"is_data_discount_logging_enabled":false,"is_observability_broadcast_enabled":true,"is_observability_io_logging_enabled":true}`, nil},
		{"100 multi-byte characters", `{"name":"` + strings.Repeat("é", 100) + `","slug":"a"}`, nil},
		{"101 characters", `{"name":"` + strings.Repeat("é", 101) + `","slug":"a"}`, []string{"name"}},
		{"missing both", `{}`, []string{"name", "slug"}},
		{"look-alike slug", `{"name":"A","slug":"аbc"}`, []string{"slug"}},
		{"double hyphen", `{"name":"A","slug":"a--b"}`, []string{"slug"}},
		{"unknown and case-folded", `{"name":"A","slug":"a","Name":"B","extra":1}`, []string{"Name", "extra"}},
		{"duplicate key", `{"name":"A","slug":"a","slug":"b"}`, []string{"slug"}},
		{"quoted number", `{"name":"A","slug":"a","io_logging_sampling_rate":"0.5"}`, []string{"io_logging_sampling_rate"}},
		{"rate out of range", `{"name":"A","slug":"a","io_logging_sampling_rate":0}`, []string{"io_logging_sampling_rate"}},
		{"bool as string", `{"name":"A","slug":"a","is_data_discount_logging_enabled":"true"}`, []string{"is_data_discount_logging_enabled"}},
		{"lone surrogate", `{"name":"\ud800","slug":"a"}`, []string{"name"}},
		{"literal replacement char is fine", `{"name":"\ufffd","slug":"a"}`, nil},
		{"trailing data", `{"name":"A","slug":"a"} {}`, []string{"body"}},
		{"array body", `[]`, []string{"body"}},
		{"not JSON", `name=A`, []string{"body"}},
		{"invalid UTF-8", "{\"name\":\"\xff\",\"slug\":\"a\"}", []string{"body"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseCreateRequest([]byte(tt.body))
			if len(tt.fields) == 0 {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			var bad *InvalidError
			if !errors.As(err, &bad) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("want *InvalidError, got %v", err)
			}
			for _, f := range tt.fields {
				if _, ok := bad.Fields[f]; !ok {
					t.Errorf("field %q not named: %v", f, bad.Fields)
				}
			}
			if len(bad.Fields) != len(tt.fields) {
				t.Errorf("named %v, want exactly %v", bad.Fields, tt.fields)
			}
		})
	}
}

func TestParseUpdateRequest(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name   string
		body   string
		want   UpdateRequest
		fields []string // offending fields; none means valid
	}{
		{name: "empty object", body: `{}`, want: UpdateRequest{}},
		{name: "name only", body: `{"name":"N"}`, want: UpdateRequest{Name: Optional[string]{Set: true, Value: "N"}}},
		{name: "nulls are set and nil", body: `{"description":null,"default_image_model":null,"io_logging_api_key_ids":null}`,
			want: UpdateRequest{Description: Optional[*string]{Set: true}, DefaultImageModel: Optional[*string]{Set: true},
				IOLoggingAPIKeyIDs: Optional[[]string]{Set: true}}},
		{name: "empty list is not null", body: `{"io_logging_api_key_ids":[]}`,
			want: UpdateRequest{IOLoggingAPIKeyIDs: Optional[[]string]{Set: true, Value: []string{}}}},
		{name: "values", body: `{"default_provider_sort":"price","io_logging_sampling_rate":1e-4,"is_observability_broadcast_enabled":false}`,
			want: UpdateRequest{DefaultProviderSort: Optional[*string]{Set: true, Value: str("price")},
				IOLoggingSamplingRate:           Optional[float64]{Set: true, Value: 0.0001},
				IsObservabilityBroadcastEnabled: Optional[bool]{Set: true}}},
		{name: "null name", body: `{"name":null}`, fields: []string{"name"}},
		{name: "null slug", body: `{"slug":null}`, fields: []string{"slug"}},
		{name: "null rate and boolean", body: `{"io_logging_sampling_rate":null,"is_data_discount_logging_enabled":null}`,
			fields: []string{"io_logging_sampling_rate", "is_data_discount_logging_enabled"}},
		{name: "501-character description", body: `{"description":"` + strings.Repeat("d", 501) + `"}`, fields: []string{"description"}},
		{name: "case-folded key", body: `{"Slug":"a"}`, fields: []string{"Slug"}},
		{name: "trailing data", body: `{} {}`, fields: []string{"body"}},
		{name: "null body", body: `null`, fields: []string{"body"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseUpdateRequest([]byte(tt.body))
			if len(tt.fields) == 0 {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("got %+v\nwant %+v", got, tt.want)
				}
				if got.Empty() != (tt.body == `{}`) {
					t.Errorf("Empty() = %v", got.Empty())
				}
				return
			}
			var bad *InvalidError
			if !errors.As(err, &bad) {
				t.Fatalf("want *InvalidError, got %v", err)
			}
			var names []string
			for f := range bad.Fields {
				names = append(names, f)
			}
			sort.Strings(names)
			if !reflect.DeepEqual(names, tt.fields) {
				t.Errorf("named %v, want %v", names, tt.fields)
			}
		})
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
