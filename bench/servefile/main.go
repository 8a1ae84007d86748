// Command servefile is the baseline of bench/downloads.sh: net/http serving
// one file with http.ServeContent and nothing else (no auth, no metadata,
// no logging), the fastest a Go server sends that file.
package main

import (
	"flag"
	"log"
	"net/http"
	"os"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	path := flag.String("file", "", "the file to serve at every path")
	flag.Parse()
	if *path == "" {
		log.Fatal("servefile: -file is required")
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := os.Open(*path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer f.Close()
		info, err := f.Stat()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/pdf")
		http.ServeContent(w, r, "", info.ModTime(), f)
	})
	log.Fatal(http.ListenAndServe(*addr, h))
}
