package gateway

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/internal/jsonobj"
	"github.com/aigateway/gateway/internal/money"
)

// The one body reader of the JSON routes: it checks the request's headers,
// reads the body within its limit, and walks the one JSON object it must
// be, strictly (internal/jsonobj: no duplicate keys, no data after the
// object, UTF-8 only). Each route's decoder turns the members into the
// domain's typed request; the domain judges the values.

// maxJSONBody caps JSON request bodies; a workspace is well under 10 KiB.
const maxJSONBody = 64 << 10

// maxIdempotencyKey bounds the Idempotency-Key header.
const maxIdempotencyKey = 255

// readJSONBody reads a JSON body of at most limit bytes and the
// Idempotency-Key header, checking the HTTP layer's part: the media type
// (checkJSONRequest) and the key's form.
func readJSONBody(w http.ResponseWriter, r *http.Request, limit int64) (body []byte, idempotencyKey string, err error) {
	if idempotencyKey, err = checkJSONRequest(r); err != nil {
		return nil, "", err
	}
	body, err = io.ReadAll(newBodyReader(w, r, limit))
	if err != nil {
		return nil, "", err
	}
	return body, idempotencyKey, nil
}

// checkJSONRequest checks the headers of a request with a JSON body and
// returns its Idempotency-Key.
//
// Every JSON body route holds the one rule of the contract (api.md: the
// request header is Content-Type: application/json; a request it refuses
// is a 400, "Invalid request parameters", and admin.md holds its routes to
// the same decoding): the body is declared application/json, with no
// charset or charset=utf-8 (JSON is UTF-8). A missing or other media type
// is refused with 400 naming content_type, as the upload route refuses a
// body that is not multipart: a client that sends no type, or a form's,
// has not sent what the route reads, whatever the bytes happen to be. The
// official SDKs, the Go client and the console always declare
// application/json.
func checkJSONRequest(r *http.Request) (idempotencyKey string, err error) {
	if problem := jsonMediaTypeProblem(r.Header.Get("Content-Type")); problem != "" {
		return "", badRequest(map[string]any{"content_type": problem})
	}
	idempotencyKey = r.Header.Get("Idempotency-Key")
	if len(idempotencyKey) > maxIdempotencyKey || !printableASCII(idempotencyKey) {
		return "", badRequest(map[string]any{"idempotency_key": "must be 1 to 255 printable ASCII characters"})
	}
	return idempotencyKey, nil
}

// jsonMediaTypeProblem says what is wrong with ct as the media type of a
// JSON body, or "".
func jsonMediaTypeProblem(ct string) string {
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return "must be application/json"
	}
	if charset, ok := params["charset"]; ok && !strings.EqualFold(charset, "utf-8") {
		return "must be application/json, with charset utf-8 if any"
	}
	return ""
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// walkObject calls field with each member of the JSON object body, in the
// client's order (jsonobj.Walk). It returns nil, or the problem of the
// document itself: a key given twice (named by the key, met after the
// members before it were walked), or a body that is not one UTF-8 JSON
// object (named "body", met before any member).
func walkObject(body []byte, field func(key string, raw json.RawMessage)) *invalid.Field {
	return documentProblem(jsonobj.Walk(body, field))
}

// documentProblem names a jsonobj error by its field; nil stays nil.
func documentProblem(err error) *invalid.Field {
	var dup *jsonobj.DuplicateError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &dup):
		return &invalid.Field{Name: dup.Key, Problem: "duplicate key"}
	default:
		return &invalid.Field{Name: "body", Problem: err.Error()}
	}
}

// firstProblem keeps the first problem met, for the bodies refused with
// one problem (the usage and budget routes).
type firstProblem struct {
	field invalid.Field
	met   bool
}

func (f *firstProblem) add(field, problem string) {
	if !f.met {
		f.field, f.met = invalid.Field{Name: field, Problem: problem}, true
	}
}

// addErr adds the first field problem err names, if any.
func (f *firstProblem) addErr(err error) {
	if fields := invalid.Fields(err); len(fields) > 0 {
		f.add(fields[0].Name, fields[0].Problem)
	}
}

func (f *firstProblem) err() error {
	if !f.met {
		return nil
	}
	return invalid.One(f.field.Name, f.field.Problem)
}

// The typed values of a member, read as encoding/json reads them into a
// Go value (the routes' answers to the odd cases are theirs: a null read as
// a string is "", as json.Unmarshal leaves a string it is given null).

// unmarshalString reads raw as json.Unmarshal reads into a string: a JSON
// string, or null as "".
func unmarshalString(raw json.RawMessage) (string, bool) {
	if jsonobj.IsNull(raw) {
		return "", true
	}
	return jsonobj.String(raw)
}

// unmarshalStrings reads raw as json.Unmarshal reads into a []string (a
// null element is ""); ok is false for anything but an array of strings
// (or null, read as nil).
func unmarshalStrings(raw json.RawMessage) (out []string, ok bool) {
	return out, json.Unmarshal(raw, &out) == nil
}

// unmarshalNumber reads the text of a number as json.Unmarshal reads into a
// json.Number, refusing a quoted one: a JSON number, or null as "".
func unmarshalNumber(raw json.RawMessage) (string, bool) {
	var n json.Number
	if len(raw) == 0 || raw[0] == '"' || json.Unmarshal(raw, &n) != nil {
		return "", false
	}
	return n.String(), true
}

// readMoney turns the text of a number into an amount of money, or names
// why it cannot be one.
func readMoney(number string) (money.Micros, string) {
	m, err := money.Parse(number)
	switch {
	case errors.Is(err, money.ErrPrecision):
		return 0, "must have at most 6 decimals"
	case err != nil:
		return 0, "must be a number in range"
	}
	return m, ""
}

// readTime reads an RFC 3339 time with seconds (and any fraction), in UTC
// (readUTC).
func readTime(s string) (time.Time, bool) {
	t, problem := readUTC(s)
	return t, problem == ""
}

// utcExample shows the form of a time every route takes.
const utcExample = "e.g. 2030-01-31T00:00:00Z"

// readUTC reads an RFC 3339 time with seconds (and any fraction) that is
// in UTC, or says what is wrong with s. The contract takes every time as
// ISO 8601 UTC: a time with another offset is refused rather than
// converted, so that a client whose clock or library writes local times
// learns it now, not when a key expires hours early or a report lands on
// another day. An offset of zero written as +00:00 is UTC and passes.
func readUTC(s string) (time.Time, string) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, "must be an ISO 8601 UTC time with seconds, " + utcExample
	}
	if _, offset := t.Zone(); offset != 0 {
		return time.Time{}, "must be in UTC (end with Z), " + utcExample
	}
	return t.UTC(), ""
}

// replacedInvalid reports whether decoding raw replaced something with
// U+FFFD: encoding/json silently turns a lone surrogate escape ("\ud800")
// into U+FFFD, which would store a different name than the client sent.
func replacedInvalid(raw []byte, decoded string) bool {
	if !strings.ContainsRune(decoded, utf8.RuneError) {
		return false
	}
	literal := strings.Count(string(raw), `\uFFFD`) + strings.Count(string(raw), `\ufffd`) + strings.Count(string(raw), string(utf8.RuneError))
	return strings.Count(decoded, string(utf8.RuneError)) > literal
}
