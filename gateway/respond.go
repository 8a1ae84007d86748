package gateway

import (
	"encoding/json"
	"net/http"
)

// writeJSON encodes v as the whole response body with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// Only a programming error (an unencodable type) gets here.
		body = []byte(`{"error":{"code":500,"message":"Internal Server Error","metadata":null}}`)
		status = http.StatusInternalServerError
	}
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
