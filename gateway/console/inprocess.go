package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// inProcess is an http.RoundTripper that serves each request with the API's
// own handler, in this process: the console calls the public API exactly as
// a remote client would (same routes, authentication, rate limits, errors),
// without a socket and without a private way into the stores.
//
// The answer streams: its headers are returned as soon as the handler
// writes them, and its body is a pipe the handler writes into, so a
// download of any size passes through in constant memory. Closing the body
// waits for the handler to return, so nothing of the request (in particular
// a streamed upload body) is touched after the caller is done with it.
type inProcess struct {
	api http.Handler
}

// clientKey carries the browser's request into the API request's context,
// so the API sees the browser's address (and TLS state) as its client.
type clientKey struct{}

// withClient remembers the browser request r in ctx for inProcess.
func withClient(ctx context.Context, r *http.Request) context.Context {
	return context.WithValue(ctx, clientKey{}, r)
}

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	in := req.Clone(req.Context())
	in.RequestURI = req.URL.RequestURI()
	in.URL.Scheme, in.URL.Host = "", ""
	if in.Body == nil {
		in.Body = http.NoBody
	}
	// The API limits failed authentications and finds the client's address
	// from RemoteAddr and, behind a trusted proxy, X-Forwarded-For: the
	// browser's own values give the API the same answer as if the browser
	// had called it, so every limit stays per real client.
	if browser, ok := req.Context().Value(clientKey{}).(*http.Request); ok {
		in.RemoteAddr = browser.RemoteAddr
		in.TLS = browser.TLS
		in.Host = browser.Host
		in.Header.Del("X-Forwarded-For")
		if xff := browser.Header.Values("X-Forwarded-For"); len(xff) > 0 {
			in.Header["X-Forwarded-For"] = xff
		}
	} else {
		in.RemoteAddr = "127.0.0.1:0"
	}

	pr, pw := io.Pipe()
	w := &pipeResponse{header: http.Header{}, body: pw, ready: make(chan struct{}), done: make(chan struct{})}
	if browser, ok := req.Context().Value(clientKey{}).(*http.Request); ok {
		w.outer = browserWriter(browser)
	}
	go func() {
		defer close(w.done)
		defer func() {
			if p := recover(); p != nil {
				err := fmt.Errorf("console: API handler panicked: %v", p)
				if p == http.ErrAbortHandler {
					err = errors.New("console: API handler aborted the answer")
				}
				w.start()
				pw.CloseWithError(err)
				return
			}
			w.start()
			pw.Close()
		}()
		t.api.ServeHTTP(w, in)
	}()

	select {
	case <-w.ready:
	case <-req.Context().Done():
		pr.CloseWithError(req.Context().Err())
		<-w.done
		return nil, req.Context().Err()
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", w.status, http.StatusText(w.status)),
		StatusCode:    w.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.sent,
		Body:          &pipeBody{PipeReader: pr, done: w.done},
		ContentLength: contentLength(w.sent),
		Request:       req,
	}, nil
}

// contentLength is the Content-Length the handler declared, or -1.
func contentLength(h http.Header) int64 {
	var n int64
	if _, err := fmt.Sscan(h.Get("Content-Length"), &n); err != nil {
		return -1
	}
	return n
}

// pipeResponse is the API handler's ResponseWriter: the status and headers
// are handed over once (start), the body goes into the pipe.
type pipeResponse struct {
	header http.Header
	sent   http.Header
	status int
	body   *io.PipeWriter
	once   sync.Once
	ready  chan struct{}
	done   chan struct{}
	// outer is the browser's connection, for http.ResponseController:
	// the API moves the read deadline of a body as it arrives, and that
	// body is the browser's.
	outer http.ResponseWriter
}

func (w *pipeResponse) Header() http.Header { return w.header }

func (w *pipeResponse) WriteHeader(code int) {
	if code >= 100 && code < 200 {
		return // informational answers are not passed on
	}
	w.once.Do(func() {
		w.status = code
		w.sent = w.header.Clone()
		close(w.ready)
	})
}

func (w *pipeResponse) start() { w.WriteHeader(http.StatusOK) }

func (w *pipeResponse) Write(p []byte) (int, error) {
	w.start()
	return w.body.Write(p)
}

// Flush sends the headers; the pipe has no buffer to flush.
func (w *pipeResponse) Flush() { w.start() }

// Unwrap lets http.ResponseController reach the browser's connection
// (read and write deadlines, full duplex), which is where the bytes of
// the API's request and answer really travel.
func (w *pipeResponse) Unwrap() http.ResponseWriter { return w.outer }

// pipeBody is the answer's body; Close waits for the handler to finish.
type pipeBody struct {
	*io.PipeReader
	done chan struct{}
}

func (b *pipeBody) Close() error {
	err := b.PipeReader.Close()
	<-b.done
	return err
}

// browserWriterKey carries the browser's ResponseWriter in its request's
// context, set by the console's outermost middleware.
type browserWriterKey struct{}

func browserWriter(r *http.Request) http.ResponseWriter {
	w, _ := r.Context().Value(browserWriterKey{}).(http.ResponseWriter)
	return w
}
