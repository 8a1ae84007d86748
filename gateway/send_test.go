package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aigateway/gateway/files"
)

// stalledReader serves a large file and reports when the handler closed
// the body, which it does once sending has ended one way or another.
type stalledReader struct {
	fakeReader
	data   []byte
	stream bool
	closed chan struct{}
}

type closeSignal struct {
	io.Reader
	closed chan struct{}
}

func (c closeSignal) Close() error { close(c.closed); return nil }

func (s *stalledReader) Open(_ context.Context, _ files.FileParams) (*files.Content, error) {
	f := readFile
	f.Size = int64(len(s.data))
	body := closeSignal{Reader: bytes.NewReader(s.data), closed: s.closed}
	if s.stream {
		return files.StreamContent(f, "text/plain", -1, body), nil
	}
	return files.RangedContent(f, f.MimeType, f.Size, func(context.Context, int64, int64) (io.ReadCloser, error) {
		return body, nil
	}), nil
}

// TestDownloadToAClientThatStopsReading: a client that asks for a file and
// never reads it loses its connection once the transfer falls behind the
// minimum rate (known length) or stays idle past the body timeout (a
// provider stream), instead of holding it and the open object for ever.
func TestDownloadToAClientThatStopsReading(t *testing.T) {
	t.Parallel() // real sockets and real deadlines: waits that can overlap
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel() // a reader and a server of its own
			fr := &stalledReader{data: make([]byte, 64<<20), stream: stream, closed: make(chan struct{})}
			api, _ := newTestAPI(t, Options{FileReader: fr, BodyReadTimeout: 300 * time.Millisecond, MinUploadRate: 1 << 40})
			srv := httptest.NewServer(api.Handler())
			defer srv.Close()
			c, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			fmt.Fprintf(c, "GET /api/v1/files/file-abc/content HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer standard\r\n\r\n")
			select {
			case <-fr.closed:
			case <-time.After(20 * time.Second):
				t.Fatal("the download to a client that reads nothing was still being sent after 20 s")
			}
		})
	}
}
