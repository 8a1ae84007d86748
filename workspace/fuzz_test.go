package workspace

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzParseRequest: no body panics either parser; a refusal is always an
// *InvalidError naming fields (a 400, never a 500); an accepted creation
// encodes to JSON that is accepted again as the same request.
func FuzzParseRequest(f *testing.F) {
	for _, seed := range []string{
		`{"name":"A","slug":"a"}`,
		`{"name":"A","slug":"a","description":null,"default_text_model":"openai/gpt-4o","io_logging_sampling_rate":0.5}`,
		`{"name":"A","name":"B","slug":"a"}`, `{"Name":"A","slug":"a"}`, `{"name":"A","slug":"a"} {}`,
		`{"name":"\ud800","slug":"a"}`, `{"io_logging_sampling_rate":"1"}`, `[]`, `null`, ``, `{`,
		`{"io_logging_api_key_ids":["a","a"]}`, `{"slug":"а"}`, `{"name":"` + string(make([]byte, 200)) + `"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := ParseCreateRequest(body)
		if err != nil {
			var bad *InvalidError
			if !errors.As(err, &bad) || !errors.Is(err, ErrInvalid) || len(bad.Fields) == 0 {
				t.Fatalf("create refused with %T %v, want an *InvalidError naming fields", err, err)
			}
		} else {
			again, err := json.Marshal(req)
			if err != nil {
				t.Fatalf("an accepted request does not encode: %v", err)
			}
			if _, err := ParseCreateRequest(again); err != nil {
				t.Fatalf("accepted %q, then refused its own encoding %s: %v", body, again, err)
			}
		}
		if _, err := ParseUpdateRequest(body); err != nil {
			var bad *InvalidError
			if !errors.As(err, &bad) || len(bad.Fields) == 0 {
				t.Fatalf("update refused with %T %v, want an *InvalidError naming fields", err, err)
			}
		}
	})
}
