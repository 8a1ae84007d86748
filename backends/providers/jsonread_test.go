package providers

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// decoderPairs are the decoders of file records, each with its encoding/json
// reference (jsonref_test.go).
var decoderPairs = []struct {
	name      string
	got, want func([]byte) (any, error)
}{
	{"openai list", wrap(openAIRecords.list), wrap(stdDecodeOpenAIList)},
	{"openai info", wrap(openAIRecords.info), wrap(stdDecodeOpenAIInfo)},
	{"openai upload", wrap(openAIRecords.upload), wrap(stdDecodeOpenAIFile)},
	{"anthropic list", wrap(anthropicRecords.list), wrap(stdDecodeAnthropicList)},
	{"anthropic info", wrap(anthropicRecords.info), wrap(stdDecodeAnthropicInfo)},
	{"anthropic upload", wrap(anthropicRecords.upload), wrap(stdDecodeAnthropicFile)},
}

func wrap[T any](f func([]byte) (T, error)) func([]byte) (any, error) {
	return func(b []byte) (any, error) { return f(b) }
}

// checkDecoders fails when a decoder and its reference disagree on body:
// one refuses it and the other does not, or both read it differently.
func checkDecoders(t *testing.T, body []byte) {
	t.Helper()
	for _, d := range decoderPairs {
		got, gotErr := d.got(bytes.Clone(body))
		want, wantErr := d.want(bytes.Clone(body))
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%s of %q: err = %v, encoding/json's = %v", d.name, body, gotErr, wantErr)
		}
		if gotErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%s of %q:\n got %+v\nwant %+v", d.name, body, got, want)
		}
	}
}

const (
	openAIRecord    = `{"id":"file-abc123","object":"file","bytes":120000,"created_at":1677610602,"filename":"mydata.jsonl","purpose":"fine-tune","status":"processed","status_details":null,"expires_at":null}`
	anthropicRecord = `{"id":"file_011CNha8iCJcU1wXNR6q4V8w","type":"file","filename":"document.pdf","mime_type":"application/pdf","size_bytes":1024000,"created_at":"2025-01-01T00:00:00Z","downloadable":false}`
)

// decoderSeeds are answers as the providers send them, and variations on
// every rule a decoder must follow as encoding/json does.
var decoderSeeds = []string{
	openAIRecord,
	anthropicRecord,
	`{"object":"list","data":[` + openAIRecord + `,` + openAIRecord + `],"has_more":true,"first_id":"file-abc123","last_id":"file-abc123"}`,
	`{"data":[` + anthropicRecord + `],"has_more":false,"first_id":"file_011CNha8iCJcU1wXNR6q4V8w","last_id":null}`,
	`{"object":"list","data":[],"has_more":false}`,
	`{"data":[],"has_more":false}`,
	// Both dialects in one record.
	`{"id":"file-1","object":"file","type":"file","bytes":1,"size_bytes":2,"created_at":1,"purpose":"batch"}`,
	`{"id":"file-1","object":"file","type":"file","bytes":1,"size_bytes":2,"created_at":"2025-01-01T00:00:00+02:00"}`,
	// Space everywhere it may be, and where it may not.
	" \t\r\n{ \"object\" : \"list\" , \"data\" : [ { \"id\" : \"f\" , \"object\" : \"file\" } ] , \"has_more\" : false } \n",
	"\ufeff{}", "{}x", "{} {}", "", " ", "{", "}", "[]", "null", `"x"`, `1`, `{"data":[],"has_more":false,}`,
	// Nulls: a string or a number is left, a pointer made nil.
	`{"id":null,"object":"file","bytes":null,"created_at":null,"filename":null,"purpose":null}`,
	`{"id":"f","object":"file","bytes":5,"bytes":null}`,
	`{"id":"f","type":"file","size_bytes":5,"size_bytes":null,"created_at":null,"downloadable":null}`,
	`{"object":"list","data":null,"has_more":false}`,
	`{"object":"list","data":[],"has_more":null}`,
	`{"object":"list","data":[null],"has_more":false}`,
	`{"data":[null,` + anthropicRecord + `],"has_more":false}`,
	// Repeated members: the last is kept, a repeated array read over the
	// former's elements.
	`{"id":"a","id":"b","object":"file","bytes":1}`,
	`{"object":"list","data":[{"id":"a","object":"file","purpose":"batch"},{"id":"b","object":"file"}],"data":[{"id":"c"}],"has_more":false}`,
	`{"object":"list","data":[{"id":"a","object":"file"},{"id":"b","object":"file","purpose":"x"}],"data":[{"id":"c"}],"data":[{"id":"d"},{"id":"e"}],"has_more":false}`,
	`{"object":"list","data":[{"id":"a","object":"file"}],"data":null,"data":[{"id":"b"}],"has_more":false}`,
	`{"object":"list","data":[{"id":"a","object":"file"}],"data":[],"has_more":false}`,
	`{"has_more":true,"has_more":false,"data":[]}`,
	// Keys matched without regard to case, and by Unicode folding.
	`{"ID":"f","OBJECT":"file","Bytes":3,"Created_At":1,"FileName":"a","PURPOSE":"batch"}`,
	`{"Id":"f","Type":"file","SIZE_BYTES":3,"Mime_Type":"a/b","DOWNLOADABLE":true}`,
	`{"id":"f","object":"file","byte\u017f":3}`,         // ſ folds to s
	`{"id":"f","object":"file","bytes":3,"\u212aey":1}`, // Kelvin sign
	"{\"id\":\"f\",\"object\":\"file\",\"BYTEſ\":3}",
	`{"OBJECT":"list","DATA":[],"Has_More":true}`,
	`{"id":"f","object":"file","id":"g"}`,
	// Escapes, in keys and values, and invalid UTF-8.
	`{"\u0069d":"f\u00e9\n\"","object":"fil\u0065","filename":"a\/b\\c\ud83d\ude00\ud800"}`,
	"{\"id\":\"f\xff\xfe\",\"object\":\"file\",\"filename\":\"caf\xc3\xa9\"}",
	"{\"id\":\"f\",\"object\":\"file\",\"filename\":\"a\x01\"}",
	`{"id":"f\x","object":"file"}`,
	`{"id":"f\u12","object":"file"}`,
	`{"id":"f\u12G4","object":"file"}`,
	`{"id":"f`,
	`{"id":"f\`,
	// Numbers.
	`{"id":"f","object":"file","bytes":-0,"created_at":-1}`,
	`{"id":"f","object":"file","bytes":1.0}`,
	`{"id":"f","object":"file","bytes":1e3}`,
	`{"id":"f","object":"file","bytes":9223372036854775807}`,
	`{"id":"f","object":"file","bytes":9223372036854775808}`,
	`{"id":"f","object":"file","bytes":01}`,
	`{"id":"f","object":"file","bytes":-}`,
	`{"id":"f","object":"file","bytes":1.}`,
	`{"id":"f","object":"file","bytes":1e}`,
	`{"id":"f","object":"file","bytes":+1}`,
	`{"id":"f","object":"file","x":[1.5e+10,-0.0e-0,0E1,-12.34]}`,
	// Values of the wrong type.
	`{"id":1,"object":"file"}`,
	`{"id":"f","object":"file","bytes":"1"}`,
	`{"id":"f","object":"file","created_at":true}`,
	`{"id":"f","type":"file","size_bytes":1,"downloadable":"yes"}`,
	`{"id":"f","type":"file","size_bytes":1,"created_at":1700000000}`,
	`{"id":"f","type":"file","size_bytes":1,"created_at":"yesterday"}`,
	`{"id":"f","type":"file","size_bytes":1,"created_at":{"a":1}}`,
	`{"object":"list","data":{},"has_more":false}`,
	`{"object":"list","data":[1],"has_more":false}`,
	`{"object":"list","data":[[]],"has_more":false}`,
	`{"object":"list","data":[],"has_more":0}`,
	// Members skipped, of every kind.
	`{"id":"f","object":"file","x":{"a":[true,false,null,{"b":"c\"}"}],"d":{}},"y":[],"z":""}`,
	`{"id":"f","object":"file","x":tru}`,
	`{"id":"f","object":"file","x":nul}`,
	`{"id":"f","object":"file","x":[1,]}`,
	`{"id":"f","object":"file","x":[1 2]}`,
	`{"id":"f","object":"file","x":{"a" 1}}`,
	`{"id":"f","object":"file","x":{1:1}}`,
	`{"id":"f","object":"file",}`,
	`{"id":"f" "object":"file"}`,
	// Nesting at and past encoding/json's limit.
	`{"id":"f","object":"file","x":` + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + `}`,
	`{"id":"f","object":"file","x":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`,
	`{"id":"f","object":"file","x":` + strings.Repeat(`{"a":`, 9999) + `1` + strings.Repeat("}", 9999) + `}`,
}

func TestDecodersAgreeWithEncodingJSON(t *testing.T) {
	for i, seed := range decoderSeeds {
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkDecoders(t, []byte(seed)) })
	}
}

// FuzzDecoders holds the decoders to encoding/json's reading of any input.
// Run with go test -fuzz FuzzDecoders ./providers/.
func FuzzDecoders(f *testing.F) {
	for _, seed := range decoderSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkDecoders(t, body) })
}

func TestDecodeErrorsByKind(t *testing.T) {
	for body, want := range map[string]error{
		`{"id":"f"`:                errJSONSyntax,
		`{"id":"f"}}`:              errJSONSyntax,
		`{"id":1}`:                 errJSONType,
		strings.Repeat("[", 1e4+1): errJSONType, // the top level is no object
		`{"x":` + strings.Repeat("[", 1e4) + strings.Repeat("]", 1e4) + `}`: errJSONSyntax,
	} {
		if _, err := openAIRecords.info([]byte(body)); !errors.Is(err, want) {
			t.Errorf("%.20q: %v, want %v", body, err, want)
		}
	}
}

// BenchmarkDecodeList compares the list decoders with encoding/json's on a
// page of 100 records.
func BenchmarkDecodeList(b *testing.B) {
	page := func(record string) []byte {
		return []byte(`{"object":"list","data":[` + strings.TrimSuffix(strings.Repeat(record+",", 100), ",") + `],"has_more":true}`)
	}
	for _, d := range []struct {
		name   string
		body   []byte
		decode func([]byte) (any, error)
	}{
		{"openai", page(openAIRecord), wrap(openAIRecords.list)},
		{"openai-encoding-json", page(openAIRecord), wrap(stdDecodeOpenAIList)},
		{"anthropic", page(anthropicRecord), wrap(anthropicRecords.list)},
		{"anthropic-encoding-json", page(anthropicRecord), wrap(stdDecodeAnthropicList)},
	} {
		b.Run(d.name, func(b *testing.B) {
			b.SetBytes(int64(len(d.body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.decode(d.body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
