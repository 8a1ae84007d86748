package gateway

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLimitedConnKeepsReadFrom: the connection cap's wrapper must not hide
// the TCP connection's ReadFrom, or downloads lose sendfile(2). A file sent
// through it arrives whole.
func TestLimitedConnKeepsReadFrom(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- string(b)
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	var c net.Conn = &limitedConn{Conn: raw, release: func() {}}
	if _, ok := c.(io.ReaderFrom); !ok {
		t.Fatal("limitedConn hides io.ReaderFrom")
	}
	want := strings.Repeat("sendfile ", 10_000)
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte(want), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, err := c.(io.ReaderFrom).ReadFrom(&io.LimitedReader{R: f, N: int64(len(want))}); err != nil || n != int64(len(want)) {
		t.Fatalf("ReadFrom = %d, %v", n, err)
	}
	c.Close()
	if s := <-got; s != want {
		t.Errorf("peer received %d bytes, want %d", len(s), len(want))
	}
}
