package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// writeJSON encodes v as the whole response body with status. The answer
// declares its length: an error answer may be flushed before its handler
// returns (linger drains the rest of a refused body after it), and without
// a length net/http would then end it only by closing the connection, so a
// client would not know it had the whole answer until the drain was over.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// Only a programming error (an unencodable type) gets here.
		body = []byte(`{"error":{"code":500,"message":"Internal Server Error","metadata":null}}`)
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	writeBody(w, status, body)
}

// writeBody writes pre-encoded JSON.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// jsonContentType is shared so the hot path does not allocate a slice per
// response; net/http only reads header values.
var jsonContentType = []string{"application/json"}
