package gateway

import (
	"errors"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
)

// unrouted answers a path or method the API does not have. Under /api/v1
// the caller must authenticate first, so anonymous probes get 401 for every
// path and method alike.
func (a *API) unrouted(notThere error) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if strings.HasPrefix(r.URL.Path, apiPrefix+"/") {
			if _, err := a.authn.authenticate(r, stateOf(r.Context())); err != nil {
				return err
			}
		}
		return notThere
	}
}

// wrongMethod answers a known path asked with a method it does not serve:
// 405 with the Allow header RFC 9110 §15.5.6 requires, naming the methods
// routes serves there. Under /api/v1 the caller is authenticated first, as
// for an unknown path, so only a caller with a key learns them.
func (a *API) wrongMethod(routes chi.Routes) handlerFunc {
	refuse := a.unrouted(errMethodNotAllowed)
	return func(w http.ResponseWriter, r *http.Request) error {
		err := refuse(w, r)
		if errors.Is(err, errMethodNotAllowed) {
			if allow := allowedMethods(routes, r); allow != "" {
				w.Header().Set("Allow", allow)
			}
		}
		return err
	}
}

// routeMethods are the methods the API has routes for, in Allow's order.
var routeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// allowedMethods lists the methods routes serves at r's path, matched the
// way chi routes (the raw path when the request kept one).
func allowedMethods(routes chi.Routes, r *http.Request) string {
	path := r.URL.RawPath
	if path == "" {
		path = r.URL.Path
	}
	var allow []string
	for _, m := range routeMethods {
		if routes.Match(chi.NewRouteContext(), m, path) {
			allow = append(allow, m)
		}
	}
	return strings.Join(allow, ", ")
}
