// Command bare is the baseline of the lookup benchmark: a plain net/http
// server that answers every request with the same bytes the gateway sends
// for one model, and nothing else (no routing, auth, logs or metrics).
package main

import (
	"flag"
	"log"
	"net/http"
	"os"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18081", "listen address")
	bodyFile := flag.String("body", "", "file holding the response body")
	flag.Parse()
	body, err := os.ReadFile(*bodyFile)
	if err != nil {
		log.Fatal(err)
	}
	etag := []string{`"bench"`}
	ct := []string{"application/json"}
	log.Fatal(http.ListenAndServe(*addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Content-Type"] = ct
		h["Etag"] = etag
		_, _ = w.Write(body)
	})))
}
