package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aigateway/gateway/gateway/openapi"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// contract checks answers against the OpenAPI document the gateway embeds
// and serves. Every answer of the suites goes through it (see
// contractTransport), so a handler whose answer drifts from the document —
// a field of the wrong type, a required field missing, a field the document
// does not name, a status it does not list — fails the test that got it.
type contract struct {
	router routers.Router
}

// loadDocument parses and validates the embedded document once per test
// binary.
var loadDocument = sync.OnceValues(func() (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(openapi.Document)
	if err != nil {
		return nil, err
	}
	return doc, doc.Validate(context.Background())
})

// newContract builds the checker. The document's server is the relative
// /api/v1, so it matches requests to any gateway, whatever its address.
func newContract() (*contract, error) {
	doc, err := loadDocument()
	if err != nil {
		return nil, fmt.Errorf("OpenAPI document: %w", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("OpenAPI router: %w", err)
	}
	return &contract{router: router}, nil
}

// maxCheckedBody bounds the JSON bodies read for checking; the largest real
// one (GET /models) is a few MiB.
const maxCheckedBody = 64 << 20

// check validates resp, the answer to req. It reads a JSON body whole and
// puts it back into resp, so the caller reads it as if nothing happened; a
// body that fails while being read is handed on with its failure, unchecked
// (an aborted answer is what some suites test for).
func (c *contract) check(req *http.Request, resp *http.Response) error {
	if !strings.HasPrefix(req.URL.Path, "/api/v1/") {
		return nil // health, readiness and metrics are not part of the API
	}
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	isJSON := mediaType == "application/json"
	if !isJSON && resp.Header.Get("X-Request-Id") == "" {
		// Answers net/http writes itself before the gateway sees the
		// request (a malformed request, headers too large): plain text,
		// outside the document by design (README).
		return nil
	}
	var body []byte
	if isJSON {
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxCheckedBody))
		resp.Body.Close()
		if err != nil {
			resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(data), errReader{err}))
			return nil
		}
		resp.Body = io.NopCloser(bytes.NewReader(data))
		body = data
	}

	route, params, err := c.router.FindRoute(req)
	if err != nil {
		// A request the document does not describe may only be refused, in
		// the envelope: 404 for an unknown path, 405 for a known path with
		// another method.
		want := http.StatusNotFound
		if errors.Is(err, routers.ErrMethodNotAllowed) {
			want = http.StatusMethodNotAllowed
		}
		if resp.StatusCode != want && resp.StatusCode != http.StatusBadRequest {
			return fmt.Errorf("undocumented route answered %d, want %d (%v)", resp.StatusCode, want, err)
		}
		return c.checkEnvelope(req, resp, body)
	}
	if route.Operation.Responses.Status(resp.StatusCode) == nil {
		// Checked here for every status: kin-openapi lets some (304) through.
		return fmt.Errorf("status %d is not documented for %s %s", resp.StatusCode, route.Method, route.Path)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                checkOptions,
	}
	return openapi3filter.ValidateResponse(req.Context(), in)
}

// checkEnvelope validates an answer that must be the error envelope.
func (c *contract) checkEnvelope(req *http.Request, resp *http.Response, body []byte) error {
	if body == nil {
		return fmt.Errorf("status %d with Content-Type %q, want the JSON error envelope", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	doc, _ := loadDocument()
	schema := doc.Components.Schemas["Error"].Value
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("error body is not JSON: %w", err)
	}
	if err := schema.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()); err != nil {
		return fmt.Errorf("error body does not match the Error schema: %w", err)
	}
	return nil
}

// checkOptions make an undocumented status a failure, report every
// problem of an answer at once, and name each by where it is in the body
// rather than by dumping the schema.
var checkOptions = func() *openapi3filter.Options {
	o := &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}
	o.WithCustomSchemaErrorFunc(func(e *openapi3.SchemaError) string {
		reason := e.Reason
		if e.Origin != nil { // the JSON Schema 2020-12 validator's own account
			reason = e.Origin.Error()
		}
		return "at /" + strings.Join(e.JSONPointer(), "/") + ": " + reason
	})
	return o
}()

// errReader fails every read with err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// contractTransport checks every answer it carries with c and reports a
// breach as a failure of t. The answer is still handed to the caller, so
// the test goes on and says what it expected too.
type contractTransport struct {
	base http.RoundTripper
	c    *contract
	t    testing.TB
}

func (ct *contractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := ct.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if err := ct.c.check(req, resp); err != nil {
		ct.t.Errorf("%s %s: the %d answer breaks the OpenAPI document: %v", req.Method, req.URL.Path, resp.StatusCode, err)
	}
	return resp, nil
}

// contractClient is an http.Client whose answers are all checked against
// the document, failing t on a breach.
func contractClient(t testing.TB, base http.RoundTripper) *http.Client {
	t.Helper()
	c, err := newContract()
	if err != nil {
		t.Fatal(err)
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return &http.Client{Transport: &contractTransport{base: base, c: c, t: t}}
}
