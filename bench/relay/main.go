// Command relay is the floor of the passthrough benchmark: a plain net/http
// server that answers every request by asking the upstream for a page of
// files with net/http's client (connections kept, as the gateway keeps
// them) and copying the answer back, bytes unread. No routing, auth, logs,
// metrics, lookups, JSON or shapes: what any passthrough built on net/http
// costs on this machine before doing anything of its own.
package main

import (
	"bytes"
	"flag"
	"io"
	"log"
	"net/http"
	"strconv"
	"sync"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18082", "listen address")
	upstream := flag.String("upstream", "", "the OpenAI Files API base URL (with /v1)")
	key := flag.String("key", "", "the upstream's API key")
	flag.Parse()
	target := *upstream + "/files?limit=100&order=desc"
	auth := []string{"Bearer " + *key}
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 128}}
	buffers := sync.Pool{New: func() any { return new(bytes.Buffer) }}
	ct := []string{"application/json"}
	log.Fatal(http.ListenAndServe(*addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, target, nil)
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		req.Header["Authorization"] = auth
		resp, err := client.Do(req)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		buf := buffers.Get().(*bytes.Buffer)
		defer buffers.Put(buf)
		buf.Reset()
		_, err = io.Copy(buf, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		h := w.Header()
		h["Content-Type"] = ct
		h.Set("Content-Length", strconv.Itoa(buf.Len()))
		_, _ = w.Write(buf.Bytes())
	})))
}
