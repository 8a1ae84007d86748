package gateway

import (
	"net/http"

	"github.com/aigateway/gateway/policy/keys"
)

// handlerFunc is the shape of a handler that needs no key: it returns an
// error instead of writing one, and adapt turns the error into the
// envelope in one place.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (a *API) adapt(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			writeError(w, r, a.log, err)
		}
	}
}

// keyedFunc is the shape of a handler that acts for a caller: it is handed
// the key that authenticated the request, never nil.
type keyedFunc func(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error

// keyed adapts a keyedFunc. A request that reaches it without a key (a
// route mounted outside requireKey) is refused with 401: no handler can
// act for a caller it does not have.
func (a *API) keyed(h keyedFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		k := callerOf(r)
		if k == nil {
			writeError(w, r, a.log, keys.ErrUnauthenticated)
			return
		}
		if err := h(w, r, k); err != nil {
			writeError(w, r, a.log, err)
		}
	}
}
