package e2e

// Failure injection for uploads: a client that goes away at 10, 50 and 99 %
// of its body, a storage server killed mid-stream, and a gateway shut down
// while an upload stalls. After each, nothing may be left anywhere: the
// checks of assertNothingLeft (files_test.go) run once the gateway has
// finished with the request.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aigateway/gateway/backends/providers/providertest"
	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/files/blob"
	"github.com/aigateway/gateway/internal/testenv"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// fileS3PartBytes is the S3 backend's default part size: bodies larger than it
// go up as multipart uploads, which a failure must abort.
const fileS3PartBytes = 5 * fileMiB

// fileDisconnectSizes are the file sizes of the disconnect tests per backend:
// several MiB; for S3 more than two parts; for GCS more than one resumable
// chunk (4 MiB by default) yet small, since the emulator buffers whole
// uploads.
var fileDisconnectSizes = map[string]int{"fs": 4 * fileMiB, "s3": 12 * fileMiB, "gcs": 6 * fileMiB}

// fileWritePartial sends the head of an upload declaring the whole body, then
// its first n bytes, and returns the connection, still open.
func fileWritePartial(t *testing.T, addr, key, query string, body []byte, contentType string, n int) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial gateway: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	head := fileRequestHead(addr, key, query, contentType, int64(len(body)))
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(body[:n]); err != nil {
		t.Fatalf("write the first %d bytes: %v", n, err)
	}
	return conn
}

// awaitPending waits until the bucket shows an upload in progress, so a
// failure injected next really happens mid-stream.
func (in *fileInspector) awaitPending(t *testing.T) {
	t.Helper()
	pl, ok := in.bucket.(blob.Pending)
	if !ok {
		return
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		pending, err := pl.PendingUploads(ctx)
		cancel()
		if err == nil && len(pending) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no upload in progress showed in the %s bucket within 20s (last error %v)", in.backend, err)
		}
		time.Sleep(20 * time.Millisecond) // poll interval, bounded by the deadline
	}
}

// fileShowsPending reports whether an upload of n body bytes is far enough
// along to show as pending in the bucket: the fs backend writes a temporary
// file from the start, S3 starts a multipart upload once a part is full.
func fileShowsPending(backend string, n int) bool {
	switch backend {
	case "fs":
		return true
	case "s3":
		return n > fileS3PartBytes+64*fileKiB
	}
	return false
}

// TestUploadClientDisconnect: a client that closes its connection at 10, 50
// or 99 % of a multi-MiB body leaves nothing, on every backend and for a
// BYOK provider.
func TestUploadClientDisconnect(t *testing.T) {
	for _, sc := range storageCases() {
		t.Run(sc.name, func(t *testing.T) {
			cfg := fileTestConfig(t)
			sc.configure(t, &cfg)
			e := newFileEnv(t, cfg)
			key, _ := e.standardKey(t, "alice")
			body, ct := fileForm(fileSingle("big.pdf", filePDF(fileDisconnectSizes[sc.name])))
			for _, pct := range []int{10, 50, 99} {
				t.Run(fmt.Sprintf("at %d%%", pct), func(t *testing.T) {
					before := e.state(t)
					finished := e.uploadsFinished(t)
					n := len(body) * pct / 100
					conn := fileWritePartial(t, e.addr(), key, "", body, ct, n)
					if fileShowsPending(sc.name, n) {
						e.awaitPending(t)
					}
					conn.Close()
					e.awaitUploadsFinished(t, finished+1)
					e.awaitNothingLeft(t, before, 30*time.Second)
				})
			}
		})
	}

	t.Run("byok-openai", func(t *testing.T) {
		stand := providertest.NewOpenAI(t)
		cfg := fileTestConfig(t)
		storageCases()[0].configure(t, &cfg)
		cfg.Providers.OpenAI.BaseURL = stand.BaseURL
		e := newFileEnv(t, cfg, stand)
		key, ws := e.standardKey(t, "alice")
		e.setProviderKey(t, ws, "openai", providertest.OpenAIKey)
		body, ct := fileForm(fileSingle("big.pdf", filePDF(4*fileMiB)))
		for _, pct := range []int{10, 50, 99} {
			t.Run(fmt.Sprintf("at %d%%", pct), func(t *testing.T) {
				before := e.state(t)
				finished := e.uploadsFinished(t)
				nreq := len(stand.Requests())
				conn := fileWritePartial(t, e.addr(), key, "provider=openai", body, ct, len(body)*pct/100)
				conn.Close()
				e.awaitUploadsFinished(t, finished+1)
				reqs := stand.AwaitRequests(t, nreq+1)
				if last := reqs[len(reqs)-1]; last.Complete || last.FileID != "" || last.BodyBytes == 0 {
					t.Errorf("provider request: complete %v, file %q, %d bytes; want an upload begun and cut off",
						last.Complete, last.FileID, last.BodyBytes)
				}
				e.awaitNothingLeft(t, before, 30*time.Second)
			})
		}
	})
}

// addr is the test gateway's host:port.
func (e *fileEnv) addr() string { return strings.TrimPrefix(e.g.URL, "http://") }

// fileS3Server is an S3-compatible server of the test's own, which it may kill
// and restart on the same port and data directory.
type fileS3Server struct {
	bin, dir, port, access, secret, log string
	cmd                                 *exec.Cmd
}

func fileStartS3Server(t *testing.T, v *fileS3Server) {
	t.Helper()
	logf, err := os.OpenFile(v.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(v.bin, "--port", "127.0.0.1:"+v.port, "--quiet", "posix", v.dir)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+v.access, "ROOT_SECRET_KEY="+v.secret)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start versitygw: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	v.cmd = cmd
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	t.Cleanup(stop)
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case <-exited:
			out, _ := os.ReadFile(v.log)
			t.Fatalf("versitygw exited at start:\n%s", out)
		default:
		}
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+v.port, time.Second); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("versitygw did not listen within 15s")
		}
		time.Sleep(50 * time.Millisecond) // poll interval, bounded by the deadline
	}
}

// kill stops the server at once, as a crash would.
func (v *fileS3Server) kill(t *testing.T) {
	t.Helper()
	if err := v.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill versitygw: %v", err)
	}
	// Wait until the port is closed, so the gateway's next request fails.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+v.port, time.Second)
		if err != nil {
			return
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("versitygw still listens after being killed")
		}
		time.Sleep(20 * time.Millisecond) // poll interval, bounded by the deadline
	}
}

func fileFreePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// TestUploadS3StoppedMidStream: the S3 server dies while a multipart upload
// is in progress. The client gets 503 with Retry-After; once the server is
// back (same data directory), no object and no multipart upload remain.
func TestUploadS3StoppedMidStream(t *testing.T) {
	t.Parallel() // an S3 server of its own, killed and restarted
	v := &fileS3Server{
		bin:  testenv.Require(t, testenv.S3ServerVar),
		dir:  t.TempDir(),
		port: fileFreePort(t),
		// The credentials the gateway reads from the environment
		// (TestMain), on a server of this test's own, to kill.
		access: testenv.Require(t, testenv.S3AccessKeyVar),
		secret: testenv.Require(t, testenv.S3SecretKeyVar),
		log:    filepath.Join(t.TempDir(), "versitygw.log"),
	}
	fileStartS3Server(t, v)
	cfg := fileTestConfig(t)
	fileConfigureS3(t, &cfg, "http://127.0.0.1:"+v.port, v.access, v.secret)
	e := newFileEnv(t, cfg)
	key, _ := e.standardKey(t, "alice")
	before := e.state(t)

	body, ct := fileForm(fileSingle("big.pdf", filePDF(3*fileS3PartBytes)))
	first := fileS3PartBytes + fileMiB
	conn := fileWritePartial(t, e.addr(), key, "", body, ct, first)
	e.awaitPending(t)
	v.kill(t)

	// The rest of the body follows; the gateway may stop reading it.
	go func() { _, _ = conn.Write(body[first:]) }()
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer after the storage died: %v", err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_ = fileWantRefused(t, resp, got, http.StatusServiceUnavailable, fileMsgUnavail)
	if ra := resp.Header.Get("Retry-After"); ra == "" {
		t.Error("503 without Retry-After")
	} else if n, err := strconv.Atoi(ra); err != nil || n < 1 {
		t.Errorf("Retry-After = %q, want whole seconds", ra)
	}

	fileStartS3Server(t, v)
	e.awaitNothingLeft(t, before, 45*time.Second)
}

// TestUploadServerShutdownMidUpload: `serve` is stopped while an upload
// stalls mid-body; after the grace period the upload is cancelled, cleans
// up, and serve returns with nothing left behind.
func TestUploadServerShutdownMidUpload(t *testing.T) {
	for _, sc := range storageCases() {
		t.Run(sc.name, func(t *testing.T) {
			cfg := fileTestConfig(t)
			sc.configure(t, &cfg)
			cfg.Server.Listen = "127.0.0.1:0"
			cfg.Server.DrainDelay = 0
			cfg.Server.ShutdownGrace = 300 * time.Millisecond
			rt, a := buildApp(t, cfg, io.Discard)
			defer rt.Close()
			defer a.Close()
			key, _, err := rt.CreateKey(context.Background(), keys.NewKeyRequest{Name: "t", User: "alice", Role: keys.RoleStandard})
			if err != nil {
				t.Fatalf("create key: %v", err)
			}
			in := openFileInspector(t, cfg)
			in.openDB(t, cfg)
			e := &fileEnv{fileInspector: in}
			before := e.state(t)

			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			addrc := make(chan string, 1)
			served := make(chan error, 1)
			go func() { served <- a.Serve(ctx, func(addr string) { addrc <- addr }) }()
			var addr string
			select {
			case addr = <-addrc:
			case err := <-served:
				t.Fatalf("serve stopped: %v", err)
			case <-time.After(20 * time.Second):
				t.Fatal("serve did not listen within 20s")
			}

			body, ct := fileForm(fileSingle("stalled.pdf", filePDF(fileDisconnectSizes[sc.name])))
			n := len(body) / 2
			conn := fileWritePartial(t, addr, key, "", body, ct, n)
			if fileShowsPending(sc.name, n) {
				in.awaitPending(t)
			}

			stop() // SIGTERM, while the upload waits for the rest of its body
			select {
			case err := <-served:
				if err != nil {
					t.Fatalf("serve returned %v", err)
				}
			case <-time.After(45 * time.Second):
				t.Fatal("serve did not return after shutdown")
			}
			// The stalled client gets no success: an error answer or a
			// closed connection.
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil {
				resp.Body.Close()
				if resp.StatusCode < 400 {
					t.Errorf("the stalled upload was answered %d", resp.StatusCode)
				}
			}
			e.awaitNothingLeft(t, before, 20*time.Second)
		})
	}
}

// fileHeldPartProxy stands between the gateway and the S3 server and holds the
// body of one part upload (the partNumber given) for a while after it has
// fully arrived, as a slow path or a buffering load balancer may: a request
// the gateway has already given up on still reaches the server afterwards.
// Everything else passes through at once. It speaks HTTP/1.1 with
// Content-Length bodies, which is what the SDK sends to an http:// endpoint.
type fileHeldPartProxy struct {
	ln       net.Listener
	upstream string
	part     string
	hold     time.Duration

	held      chan struct{} // closed once the held part's body has arrived
	heldLine  string        // its request line, set before held is closed
	delivered chan struct{} // closed once the server has answered it
	heldOnce  sync.Once
	delivOnce sync.Once

	mu    sync.Mutex
	conns map[net.Conn]bool
	errs  []string
	wg    sync.WaitGroup
}

func fileStartHeldPartProxy(t *testing.T, upstream, part string, hold time.Duration) *fileHeldPartProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &fileHeldPartProxy{ln: ln, upstream: upstream, part: part, hold: hold,
		held: make(chan struct{}), delivered: make(chan struct{}), conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go p.handle(c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
		for _, e := range p.errs {
			t.Errorf("proxy: %s", e)
		}
	})
	return p
}

func (p *fileHeldPartProxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns[c] = true
	p.mu.Unlock()
}

func (p *fileHeldPartProxy) handle(c net.Conn) {
	defer p.wg.Done()
	defer c.Close()
	p.track(c)
	s, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
	if err != nil {
		return
	}
	defer s.Close()
	p.track(s)
	answered := make(chan struct{})
	go func() { _, _ = io.Copy(c, s); close(answered) }()
	br := bufio.NewReader(c)
	heldHere := false
	for {
		head, line, length, err := fileReadRequestHead(br)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
				p.mu.Lock()
				p.errs = append(p.errs, err.Error())
				p.mu.Unlock()
			}
			break
		}
		if _, err := s.Write(head); err != nil {
			break
		}
		body := make([]byte, length)
		if _, err := io.ReadFull(br, body); err != nil {
			break // cut off by the client: the server never gets all of it
		}
		if strings.HasPrefix(line, "PUT ") && (strings.Contains(line, "partNumber="+p.part+"&") ||
			strings.Contains(line, "partNumber="+p.part+" ")) && len(body) > fileHeldTail {
			// The server gets most of the part at once and starts on it;
			// the tail is still in flight while the client may give up.
			if _, err := s.Write(body[:len(body)-fileHeldTail]); err != nil {
				break
			}
			body = body[len(body)-fileHeldTail:]
			heldHere = true
			p.heldOnce.Do(func() {
				p.heldLine = line
				close(p.held)
			})
			time.Sleep(p.hold)
		}
		if _, err := s.Write(body); err != nil {
			break
		}
	}
	// Let the server answer what it was sent before the connection closes.
	select {
	case <-answered:
	case <-time.After(10 * time.Second):
	}
	if heldHere {
		p.delivOnce.Do(func() { close(p.delivered) })
	}
}

// fileHeldTail is how much of the held part's body arrives late.
const fileHeldTail = 64 << 10

// fileReadRequestHead reads a request head and returns it raw, with its request
// line and body length.
func fileReadRequestHead(br *bufio.Reader) (head []byte, line string, length int64, err error) {
	var b bytes.Buffer
	for first := true; ; first = false {
		l, err := br.ReadString('\n')
		if err != nil {
			return nil, "", 0, err
		}
		b.WriteString(l)
		trimmed := strings.TrimRight(l, "\r\n")
		if first {
			line = trimmed
			continue
		}
		if trimmed == "" {
			return b.Bytes(), line, length, nil
		}
		name, value, _ := strings.Cut(trimmed, ":")
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "content-length":
			if length, err = strconv.ParseInt(strings.TrimSpace(value), 10, 64); err != nil {
				return nil, "", 0, fmt.Errorf("bad Content-Length in %q", line)
			}
		case "transfer-encoding":
			return nil, "", 0, fmt.Errorf("request %q is chunked; the proxy speaks Content-Length only", line)
		}
	}
}

// TestUploadS3PartInFlightAtFailure: the client goes away while a part of
// the multipart upload is still on its way to the S3 server. The gateway
// aborts the multipart upload; the part then lands, and S3 (AWS documents
// this for AbortMultipartUpload, and versitygw behaves the same) keeps it
// as a pending upload unless the gateway makes sure no part upload is in
// flight when it aborts, or aborts again. Nothing may be left.
func TestUploadS3PartInFlightAtFailure(t *testing.T) {
	endpoint := testenv.Require(t, testenv.S3EndpointVar)
	access, secret := testenv.Require(t, testenv.S3AccessKeyVar), testenv.Require(t, testenv.S3SecretKeyVar)
	upstream := strings.TrimPrefix(strings.TrimPrefix(endpoint, "http://"), "https://")
	proxy := fileStartHeldPartProxy(t, upstream, "2", 1500*time.Millisecond)

	cfg := fileTestConfig(t)
	cfg.Storage.Backend = "s3"
	cfg.Storage.S3 = configs.S3Storage{Bucket: fileNewS3Bucket(t, endpoint, access, secret), Region: "us-east-1",
		Endpoint: "http://" + proxy.ln.Addr().String(), PathStyle: true}
	e := newFileEnv(t, cfg)
	key, _ := e.standardKey(t, "alice")
	before := e.state(t)
	finished := e.uploadsFinished(t)

	body, ct := fileForm(fileSingle("big.pdf", filePDF(3*fileS3PartBytes)))
	// Two full parts and a bit of the third have reached the gateway.
	conn := fileWritePartial(t, e.addr(), key, "", body, ct, 2*fileS3PartBytes+256*fileKiB)
	select {
	case <-proxy.held:
	case <-time.After(30 * time.Second):
		t.Fatal("part 2 never reached the S3 server's doorstep")
	}
	conn.Close()
	e.awaitUploadsFinished(t, finished+1)
	select {
	case <-proxy.delivered:
	case <-time.After(30 * time.Second):
		t.Fatal("the held part was never answered by the S3 server")
	}
	e.awaitNothingLeft(t, before, 15*time.Second)

	// The part that landed after the abort must not survive either, even
	// where ListMultipartUploads no longer shows its upload: AWS's advice is
	// to check with ListParts that an aborted upload holds no parts.
	target := strings.Fields(proxy.heldLine)[1]
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	objKey := strings.TrimPrefix(u.Path, "/"+cfg.Storage.S3.Bucket+"/")
	uploadID := u.Query().Get("uploadId")
	client := fileS3Client(endpoint, access, secret)
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		out, err := client.ListParts(ctx, &awss3.ListPartsInput{
			Bucket: aws.String(cfg.Storage.S3.Bucket), Key: aws.String(objKey), UploadId: aws.String(uploadID)})
		cancel()
		// ListParts has no modelled NoSuchUpload error: match the API code.
		var apiErr smithy.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode() == "NoSuchUpload" {
			return
		}
		if time.Now().After(deadline) {
			if err != nil {
				t.Fatalf("ListParts of the aborted upload %s: %v, want NoSuchUpload", uploadID, err)
			}
			var parts []string
			for _, p := range out.Parts {
				parts = append(parts, fmt.Sprintf("part %d (%d bytes)", aws.ToInt32(p.PartNumber), aws.ToInt64(p.Size)))
			}
			t.Fatalf("the aborted multipart upload %s of %s still holds %v: a part upload in flight at the abort landed afterwards",
				uploadID, objKey, parts)
		}
		time.Sleep(100 * time.Millisecond) // poll interval, bounded by the deadline
	}
}
