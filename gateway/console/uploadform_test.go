package console_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy/keys"
)

// brokenForm is the start of a console upload's form: the token, then a
// file part whose bytes follow.
func brokenForm(token string) string {
	return "--CB\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n" + token + "\r\n" +
		"--CB\r\nContent-Disposition: form-data; name=\"file\"; filename=\"t.txt\"\r\nContent-Type: text/plain\r\n\r\n"
}

// uploadOutcome is the console's JSON answer to an upload.
type uploadOutcome struct {
	OK      bool   `json:"ok"`
	Message string `json:"message"`
}

// postForm posts body, a multipart form of boundary CB, to the console's
// upload as the page's script does, and reads the outcome.
func (b *visitor) postForm(body string) (answer, uploadOutcome) {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.base+"/console/files", strings.NewReader(body))
	req.Header.Set("Content-Type", "multipart/form-data; boundary=CB")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	a := b.do(req)
	var out uploadOutcome
	decodeJSON(b.t, a.Body, &out)
	return a, out
}

// TestUploadOfABrokenFormIsNoSuccess: a console upload whose browser form
// breaks before the file ends is answered for what it is, and stores
// nothing: a form without its closing boundary is the browser's 400 (the
// API's own answer to the same bytes), and a form whose bytes stop
// arriving is the API's 408. Neither is a 500, nor a 200 with no body.
func TestUploadOfABrokenFormIsNoSuccess(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Server.BodyReadTimeout = 500 * time.Millisecond
	g := startGateway(t, cfg, true)
	std := g.createKey(t, keys.RoleStandard)
	b := g.browser(t)
	b.signIn(std)
	token := b.csrf("/console/files")

	t.Run("no closing boundary", func(t *testing.T) {
		a, answer := b.postForm(brokenForm(token) + "hello\n")
		if a.StatusCode != http.StatusBadRequest || answer.OK || !strings.Contains(answer.Message, "incomplete or malformed") {
			t.Errorf("answer = %d %s, want 400 saying the upload was incomplete or malformed", a.StatusCode, a.Body)
		}
	})

	// rawUpload sends the head of a console upload over a connection of
	// its own, the session's cookie with it, declaring a body far longer
	// than what is sent.
	rawUpload := func(t *testing.T) *net.TCPConn {
		u, _ := url.Parse(g.URL + "/console/files")
		var cookies []string
		for _, c := range b.hc.Jar.Cookies(u) {
			cookies = append(cookies, c.Name+"="+c.Value)
		}
		conn, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		start := brokenForm(token) + strings.Repeat("x", 60<<10)
		_, err = fmt.Fprintf(conn, "POST /console/files HTTP/1.1\r\nHost: %s\r\nContent-Type: multipart/form-data; boundary=CB\r\n"+
			"Content-Length: %d\r\nAccept: application/json\r\nSec-Fetch-Site: same-origin\r\nCookie: %s\r\n\r\n%s",
			u.Host, len(start)+1<<20, strings.Join(cookies, "; "), start)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		return conn.(*net.TCPConn)
	}

	t.Run("body stops arriving", func(t *testing.T) {
		conn := rawUpload(t)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout {
			t.Errorf("status = %d, want 408", resp.StatusCode)
		}
	})

	// A browser that goes away mid-file has no answer: the handler aborts
	// (as the API does) rather than leave net/http to send a 200.
	t.Run("browser half-closes", func(t *testing.T) {
		conn := rawUpload(t)
		if err := conn.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("answered %d, want the connection closed without an answer", resp.StatusCode)
		}
		if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("read %v, want the end of the connection", err)
		}
	})

	files, err := g.api(t, std).ListFiles(context.Background(), 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(files.Files) != 0 {
		t.Errorf("files stored from broken forms: %+v", files.Files)
	}
}

// TestUploadOfAFileThatChangedSaysSo: a file whose length is not the size
// the page declared (it changed on disk while it was sent) is refused in
// those words, not in the API's words for the unclosed form it saw.
func TestUploadOfAFileThatChangedSaysSo(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testConfig(t), true)
	b := g.browser(t)
	b.signIn(g.createKey(t, keys.RoleStandard))
	token := b.csrf("/console/files")
	body := "--CB\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n" + token + "\r\n" +
		"--CB\r\nContent-Disposition: form-data; name=\"size\"\r\n\r\n100\r\n" +
		"--CB\r\nContent-Disposition: form-data; name=\"file\"; filename=\"t.txt\"\r\nContent-Type: text/plain\r\n\r\n" +
		"only forty bytes of text, not a hundred\n\r\n--CB--\r\n"
	a, answer := b.postForm(body)
	if answer.OK || !strings.Contains(answer.Message, "changed while it was being sent") {
		t.Errorf("answer = %d %s, want the file's change named", a.StatusCode, a.Body)
	}
}
