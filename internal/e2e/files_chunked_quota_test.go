package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// chunkedUpload sends a single-file form of data with Transfer-Encoding:
// chunked (no Content-Length) and returns the answer.
func (e *fileEnv) chunkedUpload(t *testing.T, key, filename string, data []byte) (*http.Response, []byte) {
	t.Helper()
	body, ct := fileForm(fileSingle(filename, data))
	conn := e.rawConn(t)
	host := strings.TrimPrefix(e.g.URL, "http://")
	if _, err := io.WriteString(conn, fileRequestHead(host, key, "", ct, -1, "Connection: close")); err != nil {
		t.Fatal(err)
	}
	go func() {
		w := bufio.NewWriter(conn)
		for rest := body; len(rest) > 0; {
			n := min(len(rest), 32*fileKiB)
			fmt.Fprintf(w, "%x\r\n", n)
			w.Write(rest[:n])
			w.WriteString("\r\n")
			if w.Flush() != nil {
				return
			}
			rest = rest[n:]
		}
		w.WriteString("0\r\n\r\n")
		w.Flush()
	}()
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	return resp, got
}

// TestFileUploadChunkedNearTheQuota: a body without Content-Length into a
// nearly full workspace reserves what is left, not a whole file: a file
// that fits is stored (it used to be refused for want of max_file_bytes of
// room), and one that really passes the quota gets 403, leaving nothing.
func TestFileUploadChunkedNearTheQuota(t *testing.T) {
	for _, ms := range metadataStores() {
		t.Run(ms.name, func(t *testing.T) {
			cfg := fileTestConfig(t)
			storageCases()[0].configure(t, &cfg)
			ms.configure(t, &cfg)
			cfg.Limits.MaxFileBytes = 2 * fileMiB
			cfg.Limits.WorkspaceStorageBytes = 3 * fileMiB
			e := newFileEnv(t, cfg)
			key, _ := e.standardKey(t, "alice")

			fill := fileText(2*fileMiB - 100*fileKiB) // leaves 1 MiB + 100 KiB
			resp, body := e.upload(t, key, "", nil, "fill.txt", fill)
			_ = fileWantUploaded(t, resp, body, "service", "fill.txt", fill, "text/plain")

			fits := fileText(fileMiB)
			resp, body = e.chunkedUpload(t, key, "fits.txt", fits)
			_ = fileWantUploaded(t, resp, body, "service", "fits.txt", fits, "text/plain")

			before := e.state(t)
			resp, body = e.chunkedUpload(t, key, "passes.txt", fileText(200*fileKiB)) // 100 KiB left
			_ = fileWantRefused(t, resp, body, http.StatusForbidden, fileMsgQuota)
			e.assertNothingLeft(t, before)
		})
	}
}
