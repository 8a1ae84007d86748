package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"

	"github.com/aigateway/gateway/gateway/openapi"
)

// openAPIETag is the strong ETag of the embedded document, computed once.
var openAPIETag = func() string {
	sum := sha256.Sum256(openapi.Document)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}()

// openAPI answers GET /api/v1/openapi.json with the embedded document.
func (a *API) openAPI(w http.ResponseWriter, r *http.Request) {
	writeCached(w, r, openAPIETag, openapi.Document)
}
