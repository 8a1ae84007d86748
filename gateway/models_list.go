package gateway

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aigateway/gateway/catalog"
	"github.com/aigateway/gateway/policy/keys"
)

// Paging of the model list.
const (
	maxModelPage   = 1000
	maxModelOffset = 1_000_000
)

// listModels answers GET /api/v1/models: the text models by id, unless the
// query filters, sorts or pages. The unfiltered answer is pre-encoded per
// catalog version (ETag and 304 included); a filtered one is computed from
// the version's indexes.
func (a *API) listModels(w http.ResponseWriter, r *http.Request) error {
	return a.modelList(w, r, nil)
}

// listModelsForUser answers GET /api/v1/models/user: the list with the
// calling key's model allowlist applied.
func (a *API) listModelsForUser(w http.ResponseWriter, r *http.Request, k *keys.APIKey) error {
	if k == nil || k.Models == nil {
		return a.modelList(w, r, nil)
	}
	return a.modelList(w, r, func(e *catalog.Entry) bool { return allowed(k, e) })
}

// allowed applies a key's allowlist, which holds canonical ids: a model
// allows all its variants and aliases, a variant only itself.
func allowed(k *keys.APIKey, e *catalog.Entry) bool {
	return k.AllowsModel(e.BaseID) || k.AllowsModel(e.ID)
}

func (a *API) modelList(w http.ResponseWriter, r *http.Request, allow func(*catalog.Entry) bool) error {
	c := a.catalog.Current()
	q, isDefault, err := parseModelQuery(c, r.URL.Query())
	if err != nil {
		return err
	}
	openAI := negotiateShape(r) == shapeOpenAI
	if isDefault && allow == nil {
		l := c.DefaultList(openAI)
		writeCached(w, r, l.ETag, l.Body)
		return nil
	}
	q.Allow = allow
	page, total := c.Select(q, openAI)
	var next string
	if q.Limit > 0 && q.Offset+len(page) < total {
		next = nextPage(r, q.Offset+len(page))
	}
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(http.StatusOK)
	// The models' JSON is written as pre-encoded, not copied into one body;
	// a write that fails means the client went away.
	_, _ = catalog.WriteList(w, page, total, next, openAI)
	return nil
}

// nextPage is the request's own path and query with offset moved on.
func nextPage(r *http.Request, offset int) string {
	query := r.URL.Query()
	query.Set("offset", strconv.Itoa(offset))
	return r.URL.Path + "?" + query.Encode()
}

// countModels answers GET /api/v1/models/count with the filters of the
// list.
func (a *API) countModels(w http.ResponseWriter, r *http.Request) error {
	c := a.catalog.Current()
	q, _, err := parseModelQuery(c, r.URL.Query())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Data struct {
			Count int `json:"count"`
		} `json:"data"`
	}{struct {
		Count int `json:"count"`
	}{c.Count(q)}})
	return nil
}

// parseModelQuery reads the list's query strictly, with the one query
// reader (known names only: category is accepted and ignored, as the
// public service's SDK sends it). isDefault reports a query that asks for
// exactly the unfiltered list.
func parseModelQuery(c *catalog.Catalog, query url.Values) (q catalog.Query, isDefault bool, err error) {
	q.OutputModalities = catalog.TextOnly
	isDefault = true
	offset := canonicalIntParam(&q.Offset, 0, maxModelOffset)
	err = readQuery(query, refuseUnknown, map[string]paramReader{
		"offset": func(v string) string {
			problem := offset(v)
			isDefault = isDefault && problem == "" && q.Offset == 0
			return problem
		},
		"limit": canonicalIntParam(&q.Limit, 1, maxModelPage),
		"output_modalities": func(v string) (problem string) {
			q.OutputModalities, problem = catalogParam(catalog.ParseOutputModalities(v))
			isDefault = isDefault && v == "text"
			return problem
		},
		"supported_parameters": func(v string) (problem string) {
			q.Parameters, problem = catalogParam(c.ParseParameters(v))
			isDefault = false
			return problem
		},
		"sort": func(v string) (problem string) {
			q.Sort, problem = catalogParam(catalog.ParseSort(v))
			isDefault = false
			return problem
		},
		"category": func(string) string { return "" }, // the catalog has no categories
	})
	if err != nil {
		return q, false, err
	}
	if isDefault && q.Limit > 0 && q.Limit < c.Count(catalog.Query{OutputModalities: catalog.TextOnly}) {
		isDefault = false // a page of the default list
	}
	return q, isDefault, nil
}

// canonicalIntParam reads an integer from lo to hi written as Go writes
// it: the list of models has always refused "05" and "-0", which the other
// lists' integers (queryInt) take.
func canonicalIntParam(dst *int, lo, hi int) paramReader {
	return func(v string) string {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi || v != strconv.Itoa(n) {
			return "must be an integer from " + strconv.Itoa(lo) + " to " + strconv.Itoa(hi)
		}
		*dst = n
		return ""
	}
}

// catalogParam is a parsed parameter's value and the problem of its
// catalog.QueryError, if any.
func catalogParam[T any](v T, err error) (T, string) {
	var qe *catalog.QueryError
	if errors.As(err, &qe) {
		return v, qe.Problem
	}
	if err != nil {
		return v, err.Error()
	}
	return v, ""
}

// retrieveModel answers GET /api/v1/models/{id}, where id is the whole
// model id with its slash percent-encoded (OpenAI's models.retrieve). It is
// decoded exactly once: "%252F" is the id "a%2Fb", which names nothing.
func (a *API) retrieveModel(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	raw := strings.TrimPrefix(r.URL.EscapedPath(), apiPrefix+"/models/")
	id, err := url.PathUnescape(raw)
	if err != nil {
		return badRequest(map[string]any{"id": "malformed percent-encoding"})
	}
	if !utf8.ValidString(id) || len(id) > 2*maxSegmentBytes || strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return badRequest(map[string]any{"id": "not a model id"})
	}
	e, ok := a.catalog.Current().LookupID(id)
	if !ok {
		return errModelNotFound
	}
	if k := caller; k != nil && !allowed(k, e) {
		return keys.ErrModelNotAllowed
	}
	if negotiateShape(r) == shapeOpenAI {
		writeCached(w, r, e.OpenAIETag, e.OpenAIBody)
		return nil
	}
	writeCached(w, r, e.ETag, e.Body)
	return nil
}

// modelEndpoints answers GET /api/v1/models/{author}/{slug}/endpoints: the
// link every Model carries. Variants and aliases resolve as on the model
// route.
func (a *API) modelEndpoints(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	e, err := a.resolveModel(w, r, caller)
	if err != nil {
		return err
	}
	writeCached(w, r, e.EndpointsETag, e.EndpointsBody)
	return nil
}
