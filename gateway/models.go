package gateway

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/aigateway/gateway/catalog"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/go-chi/chi/v5"
)

// CatalogSource hands out the current catalog version. A request reads it
// once, so a hot reload never mixes two versions in one answer.
type CatalogSource interface {
	Current() *catalog.Catalog
}

// errModelNotFound is the 404 of model lookups (unknown model, variant not
// offered, unusable path segment).
var errModelNotFound = errors.New("model not found")

// maxSegmentBytes bounds a decoded author or slug; real ids are far shorter.
const maxSegmentBytes = 256

// getModel answers GET /api/v1/model/{author}/{slug} with the pre-encoded
// body of the catalog version current when the request arrived.
func (a *API) getModel(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	e, err := a.resolveModel(w, r, caller)
	if err != nil {
		return err
	}
	writeCached(w, r, e.ETag, e.Body)
	return nil
}

// resolveModel finds the entry the {author} and {slug} path segments name,
// in the catalog version current when the request arrived, and checks the
// calling key's allowlist.
func (a *API) resolveModel(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) (*catalog.Entry, error) {
	author, err := pathSegment(r, "author")
	if err != nil {
		return nil, err
	}
	slug, err := pathSegment(r, "slug")
	if err != nil {
		return nil, err
	}
	e, ok := a.catalog.Current().Lookup(author, slug)
	if !ok {
		return nil, errModelNotFound
	}
	if k := caller; k != nil && !allowed(k, e) {
		return nil, keys.ErrModelNotAllowed
	}
	return e, nil
}

// writeCached writes a pre-encoded body with its strong ETag, or 304 when
// the client already holds it.
func writeCached(w http.ResponseWriter, r *http.Request, etag string, body []byte) {
	h := w.Header()
	if st := stateOf(r.Context()); st != nil {
		st.etagHeader[0] = etag
		h["Etag"] = st.etagHeader[:]
	} else {
		h["Etag"] = []string{etag}
	}
	if inm := headerValue(r.Header, "If-None-Match"); inm != "" && etagMatches(inm, etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeBody(w, http.StatusOK, body)
}

// etagMatches applies If-None-Match's weak comparison (RFC 9110 13.1.2).
func etagMatches(header, etag string) bool {
	etag = strings.TrimPrefix(etag, "W/")
	for header != "" {
		var tag string
		tag, header, _ = strings.Cut(header, ",")
		tag = strings.TrimSpace(tag)
		if tag == "*" || strings.TrimPrefix(tag, "W/") == etag {
			return true
		}
	}
	return false
}

// pathSegment returns a path value decoded exactly once. Clients send ids
// percent-encoded (gpt-4%3Afree, %7Eopenai). chi hands over the still-encoded
// segment when the request kept a raw path (r.URL.RawPath), and the decoded
// one otherwise — decoding that again would turn %253A into a colon. An
// encoded "/" inside a segment, an empty or over-long segment names nothing
// (404); invalid UTF-8 or control characters are a malformed request (400).
func pathSegment(r *http.Request, name string) (string, error) {
	v := chi.URLParam(r, name)
	if r.URL.RawPath != "" && strings.IndexByte(v, '%') >= 0 {
		var err error
		if v, err = url.PathUnescape(v); err != nil {
			return "", badRequest(map[string]any{name: "malformed percent-encoding"})
		}
	}
	if !utf8.ValidString(v) {
		return "", badRequest(map[string]any{name: "not valid UTF-8"})
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] == 0x7f {
			return "", badRequest(map[string]any{name: "contains control characters"})
		}
	}
	if v == "" || len(v) > maxSegmentBytes || strings.IndexByte(v, '/') >= 0 {
		return "", errNotFound
	}
	return v, nil
}
