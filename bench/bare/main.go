// Command bare is the baseline of the lookup benchmark: a plain net/http
// server that answers every request with the same bytes the gateway sends
// for one model, and nothing else (no routing, auth, logs or metrics).
//
// With -headers and the timeouts it is the second baseline: net/http doing
// what the gateway is obliged to do on every lookup whatever its own code
// costs. It sends the gateway's answer headers (request ids, RateLimit-*,
// ETag; the file holds them as "Name: value" lines) and arms the server's
// slow-client deadlines (a header timeout and an idle timeout, which reset
// a timer on every request).
package main

import (
	"bufio"
	"flag"
	"log"
	"net/http"
	"net/textproto"
	"os"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18081", "listen address")
	bodyFile := flag.String("body", "", "file holding the response body")
	headerFile := flag.String("headers", "", `file of "Name: value" lines sent as the answer's headers (default: Content-Type and ETag only)`)
	readHeaderTimeout := flag.Duration("read-header-timeout", 0, "the server's ReadHeaderTimeout (0: none)")
	idleTimeout := flag.Duration("idle-timeout", 0, "the server's IdleTimeout (0: none)")
	flag.Parse()
	body, err := os.ReadFile(*bodyFile)
	if err != nil {
		log.Fatal(err)
	}
	headers := http.Header{"Content-Type": {"application/json"}, "Etag": {`"bench"`}}
	if *headerFile != "" {
		if headers, err = readHeaders(*headerFile); err != nil {
			log.Fatal(err)
		}
	}
	srv := &http.Server{
		Addr:              *addr,
		ReadHeaderTimeout: *readHeaderTimeout,
		IdleTimeout:       *idleTimeout,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			for k, v := range headers {
				h[k] = v
			}
			_, _ = w.Write(body)
		}),
	}
	log.Fatal(srv.ListenAndServe())
}

// readHeaders reads the headers of an answer saved by curl -D: the status
// line, then "Name: value" lines. Date and Content-Length are left out, as
// net/http writes them itself.
func readHeaders(path string) (http.Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := textproto.NewReader(bufio.NewReader(f))
	if _, err := r.ReadLine(); err != nil { // the status line
		return nil, err
	}
	h, err := r.ReadMIMEHeader() // up to the blank line curl writes after them
	if err != nil {
		return nil, err
	}
	delete(h, "Date")
	delete(h, "Content-Length")
	return http.Header(h), nil
}
