package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

// sendAllThenRead does what Node's fetch (and so the OpenAI and Anthropic
// SDKs) does: it writes the whole request, body included, and only then
// reads the answer. It fails the test when a write fails: the server gave
// up on the body and the client could never read the answer.
func sendAllThenRead(t *testing.T, addr, head string, body io.Reader) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatalf("writing the head: %v", err)
	}
	if n, err := io.Copy(conn, body); err != nil {
		t.Fatalf("writing the body failed after %d bytes: %v (the answer cannot be read)", n, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// bigBody is larger than the loopback socket buffers, so a server that
// stops reading makes the client's writes fail.
const bigBody = 32 << 20

func lingerServer(t *testing.T, o Options) string {
	t.Helper()
	o.Log = zap.NewNop()
	if o.Auth == nil {
		o.Auth = testAuth
	}
	if o.Files == nil {
		o.Files = &fakeFiles{max: testMaxFile, up: &fakeUpload{}}
	}
	srv := httptest.NewServer(mustNew(t, o).Handler())
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

func multipartHead(auth string, length int64) string {
	h := "POST /api/v1/files HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=" + boundary + "\r\n"
	if auth != "" {
		h += "Authorization: Bearer " + auth + "\r\n"
	}
	if length >= 0 {
		return h + fmt.Sprintf("Content-Length: %d\r\n\r\n", length)
	}
	return h + "Transfer-Encoding: chunked\r\n\r\n"
}

// TestEarlyRefusalReachesClientsThatSendEverything: a request refused
// before its body is read (too large by its declared length, no key, a
// chunked upload without a key) is answered, and the rest of the body is
// read and dropped, so a client that writes everything before reading
// gets the answer rather than a broken connection.
func TestEarlyRefusalReachesClientsThatSendEverything(t *testing.T) {
	t.Parallel() // real sockets and real deadlines: waits that can overlap
	addr := lingerServer(t, Options{LingeringClose: Lingering{MaxBytes: 64 << 20, Timeout: 10 * time.Second}})
	zeros := func() io.Reader { return io.LimitReader(zeroReader{}, bigBody) }
	tests := []struct {
		name   string
		head   string
		body   io.Reader
		status int
	}{
		{"declared length over the limit", multipartHead("standard", bigBody), zeros(), http.StatusRequestEntityTooLarge},
		{"no key, declared length", multipartHead("", bigBody), zeros(), http.StatusUnauthorized},
		{"no key, chunked", multipartHead("", -1), chunked(zeros()), http.StatusUnauthorized},
		{"unknown route", "POST /api/v1/nothing HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer standard\r\n" +
			fmt.Sprintf("Content-Length: %d\r\n\r\n", bigBody), zeros(), http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := sendAllThenRead(t, addr, tt.head, tt.body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if !resp.Close {
				t.Error("the answer does not say Connection: close")
			}
			var env envelopeBody
			if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || env.Error.Code != tt.status {
				t.Fatalf("envelope %+v, %v", env, err)
			}
			if tt.status == http.StatusRequestEntityTooLarge && env.Error.Metadata["max_file_bytes"] != float64(testMaxFile) {
				t.Errorf("413 metadata %v lacks max_file_bytes", env.Error.Metadata)
			}
		})
	}
}

// TestRefusalEndsBeforeTheDrain: a client that reads before it sends (one
// that sent Expect: 100-continue, or stopped at the first bytes) gets a
// whole answer at once, though the gateway goes on draining the refused
// body for as long as Lingering allows: the answer declares its length
// rather than ending only with the connection.
func TestRefusalEndsBeforeTheDrain(t *testing.T) {
	addr := lingerServer(t, Options{LingeringClose: Lingering{MaxBytes: 64 << 20, Timeout: time.Minute}})
	for _, expect := range []bool{false, true} {
		t.Run(fmt.Sprintf("expect-continue=%v", expect), func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			head := multipartHead("standard", bigBody)
			if expect {
				head = strings.Replace(head, "\r\n\r\n", "\r\nExpect: 100-continue\r\n\r\n", 1)
			}
			if _, err := io.WriteString(conn, head); err != nil {
				t.Fatal(err)
			}
			// Far shorter than the drain's minute: only a delimited answer
			// can be read whole before it.
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge || resp.ContentLength < 0 {
				t.Fatalf("status %d, length %d; want 413 with a declared length", resp.StatusCode, resp.ContentLength)
			}
			if _, err := io.ReadAll(resp.Body); err != nil {
				t.Fatalf("the answer did not end while the body was drained: %v", err)
			}
		})
	}
}

// TestSmallUnreadBodyKeepsTheConnection: a refused request whose unread
// body is small is left to net/http, which reads it and keeps the
// connection for the next request.
func TestSmallUnreadBodyKeepsTheConnection(t *testing.T) {
	addr := lingerServer(t, Options{})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	body := strings.Repeat("x", 10<<10)
	req := fmt.Sprintf("POST /api/v1/files HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	req += "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	for i, want := range []int{http.StatusUnauthorized, http.StatusOK} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i+1, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || (i == 0 && resp.Close) {
			t.Errorf("answer %d: status %d (want %d), close %v", i+1, resp.StatusCode, want, resp.Close)
		}
	}
}

// TestLingeringIsBounded: the drain stops at its byte bound, and a body
// that stalls is dropped after the body's idle timeout, not the longer
// lingering time.
func TestLingeringIsBounded(t *testing.T) {
	t.Parallel() // real sockets and real deadlines: waits that can overlap
	t.Run("declared rest over the byte bound is not drained", func(t *testing.T) {
		t.Parallel() // a server of its own
		addr := lingerServer(t, Options{LingeringClose: Lingering{MaxBytes: 1 << 20, Timeout: 10 * time.Second}})
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(conn, multipartHead("", 2<<20)); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusUnauthorized || !resp.Close {
			t.Errorf("status %d, close %v", resp.StatusCode, resp.Close)
		}
	})
	t.Run("a stalled body is dropped after the idle timeout", func(t *testing.T) {
		t.Parallel() // a server of its own
		addr := lingerServer(t, Options{BodyReadTimeout: 300 * time.Millisecond, LingeringClose: Lingering{MaxBytes: 64 << 20, Timeout: 30 * time.Second}})
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		start := time.Now()
		if _, err := io.WriteString(conn, multipartHead("", 4<<20)+strings.Repeat("x", 1<<20)); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(conn) // the answer, then the close
		if err != nil {
			t.Fatalf("after %s: %v", time.Since(start), err)
		}
		if !bytes.HasPrefix(got, []byte("HTTP/1.1 401")) {
			t.Errorf("answer %q", got)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("closed after %s: the drain waited on a stalled client", d)
		}
	})
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// chunked frames r in chunked transfer coding.
func chunked(r io.Reader) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				if _, werr := fmt.Fprintf(pw, "%x\r\n%s\r\n", n, buf[:n]); werr != nil {
					pw.CloseWithError(werr)
					return
				}
			}
			if err == io.EOF {
				_, _ = io.WriteString(pw, "0\r\n\r\n")
				pw.Close()
				return
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return pr
}
