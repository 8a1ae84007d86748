package s3_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aigateway/gateway/backends/storage/s3"
	"github.com/aigateway/gateway/backends/storage/storagetest"
	"github.com/aigateway/gateway/files/blob"
	"github.com/aigateway/gateway/internal/testenv"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"go.uber.org/zap/zaptest"
)

// server is an S3-compatible server and its root credentials.
type server struct{ endpoint, access, secret string }

func testServer(t testing.TB) server {
	t.Helper()
	return server{
		endpoint: testenv.Require(t, testenv.S3EndpointVar),
		access:   testenv.Require(t, testenv.S3AccessKeyVar),
		secret:   testenv.Require(t, testenv.S3SecretKeyVar),
	}
}

func (s server) config(bucket string) s3.Config {
	return s3.Config{
		Bucket:      bucket,
		Endpoint:    s.endpoint,
		PathStyle:   true,
		Credentials: credentials.NewStaticCredentialsProvider(s.access, s.secret, ""),
	}
}

// raw is a plain SDK client, to set up buckets and look behind the
// Bucket's back.
func (s server) raw() *awss3.Client {
	return awss3.New(awss3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(s.endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.access, s.secret, ""),
	})
}

// createBucket makes a bucket with a unique name, emptied and removed when
// the test ends.
func (s server) createBucket(t testing.TB) string {
	t.Helper()
	var rnd [6]byte
	rand.Read(rnd[:])
	name := "gw-test-" + hex.EncodeToString(rnd[:])
	c := s.raw()
	if _, err := c.CreateBucket(t.Context(), &awss3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ups, _ := c.ListMultipartUploads(ctx, &awss3.ListMultipartUploadsInput{Bucket: aws.String(name)})
		if ups != nil {
			for _, u := range ups.Uploads {
				c.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: aws.String(name), Key: u.Key, UploadId: u.UploadId})
			}
		}
		objs, _ := c.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: aws.String(name)})
		if objs != nil {
			for _, o := range objs.Contents {
				c.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: aws.String(name), Key: o.Key})
			}
		}
		c.DeleteBucket(ctx, &awss3.DeleteBucketInput{Bucket: aws.String(name)})
	})
	return name
}

func newBucket(t testing.TB, cfg s3.Config) *s3.Bucket {
	t.Helper()
	b, err := s3.New(t.Context(), cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestContract(t *testing.T) {
	srv := testServer(t)
	storagetest.Run(t, func(t *testing.T) blob.Bucket {
		cfg := srv.config(srv.createBucket(t))
		cfg.Prefix = "gateway"
		return newBucket(t, cfg)
	})
}

// Keys land under the prefix, and the Bucket sees nothing outside it; the
// storage behind its back is the S3 bucket seen by a plain client.
func TestPrefix(t *testing.T) {
	srv := testServer(t)
	name := srv.createBucket(t)
	raw := srv.raw()
	storagetest.Prefix(t, storagetest.PrefixStore{
		NewBucket: func(t *testing.T, prefix string) blob.Bucket {
			cfg := srv.config(name)
			cfg.Prefix = prefix
			return newBucket(t, cfg)
		},
		Put: func(t *testing.T, key string, data []byte) {
			in := &awss3.PutObjectInput{Bucket: aws.String(name), Key: aws.String(key), Body: bytes.NewReader(data)}
			if _, err := raw.PutObject(t.Context(), in); err != nil {
				t.Fatalf("PutObject(%s): %v", key, err)
			}
		},
		Get: func(t *testing.T, key string) ([]byte, bool) {
			out, err := raw.GetObject(t.Context(), &awss3.GetObjectInput{Bucket: aws.String(name), Key: aws.String(key)})
			if nsk := (*types.NoSuchKey)(nil); errors.As(err, &nsk) {
				return nil, false
			}
			if err != nil {
				t.Fatalf("GetObject(%s): %v", key, err)
			}
			defer out.Body.Close()
			data, err := io.ReadAll(out.Body)
			if err != nil {
				t.Fatalf("GetObject(%s): read: %v", key, err)
			}
			return data, true
		},
	})
}

// However many uploads run, the part buffers they hold together stay
// within the budget, and a budget of a single part still lets every upload
// finish (an upload never holds one buffer while waiting for another).
func TestBufferBudgetIsShared(t *testing.T) {
	srv := testServer(t)
	for _, tc := range []struct {
		name    string
		budget  int64
		uploads int
	}{
		{"one-part", s3.MinPartSize, 4},
		{"three-parts", 3 * s3.MinPartSize, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := srv.config(srv.createBucket(t))
			cfg.BufferBudget = tc.budget
			b := newBucket(t, cfg)
			var wg sync.WaitGroup
			for i := range tc.uploads {
				wg.Go(func() {
					data := storagetest.Data(uint64(i), 11*storagetest.MiB)
					if _, err := b.Upload(t.Context(), fmt.Sprintf("ws/1/f%d", i), storagetest.ChunkedReader(data), -1, blob.UploadOptions{}); err != nil {
						t.Errorf("Upload %d: %v", i, err)
					}
				})
			}
			wg.Wait()
			if peak := b.PeakBufferBytes(); peak > tc.budget || peak < s3.MinPartSize {
				t.Errorf("peak buffer memory %d, want between one part and the budget %d", peak, tc.budget)
			}
			if n := b.BufferBytesInUse(); n != 0 {
				t.Errorf("%d buffer bytes still held after every upload returned", n)
			}
			storagetest.MustContain(t, b, "ws/1/f1", storagetest.Data(1, 11*storagetest.MiB))
		})
	}
}

// One upload holds at most two part buffers, and a spare while the budget
// has room, however large the budget and the body: one read from the
// client while two are sent. Its parts, sent concurrently, still make the
// object in order.
func TestUploadHoldsTwoPartsAndASpare(t *testing.T) {
	srv := testServer(t)
	for _, tc := range []struct {
		name   string
		budget int64
		most   int64
	}{
		{"room", 16 * s3.MinPartSize, 3 * s3.MinPartSize},
		{"two-parts", 2 * s3.MinPartSize, 2 * s3.MinPartSize},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := srv.config(srv.createBucket(t))
			cfg.BufferBudget = tc.budget
			b := newBucket(t, cfg)
			data := storagetest.Data(7, 8*s3.MinPartSize+123)
			if _, err := b.Upload(t.Context(), "ws/1/f", storagetest.ChunkedReader(data), -1, blob.UploadOptions{}); err != nil {
				t.Fatal(err)
			}
			if peak := b.PeakBufferBytes(); peak > tc.most {
				t.Errorf("peak buffer memory %d, want at most %d", peak, tc.most)
			}
			storagetest.MustContain(t, b, "ws/1/f", data)
		})
	}
}

func TestWrongCredentialsAreAccessDenied(t *testing.T) {
	srv := testServer(t)
	cfg := srv.config(srv.createBucket(t))
	cfg.Credentials = credentials.NewStaticCredentialsProvider(srv.access, "not-the-secret", "")
	b := newBucket(t, cfg)
	ctx := t.Context()
	if _, err := b.Upload(ctx, "ws/1/f", strings.NewReader("x"), 1, blob.UploadOptions{}); !errors.Is(err, blob.ErrAccessDenied) {
		t.Errorf("Upload = %v, want ErrAccessDenied", err)
	}
	if _, err := b.Stat(ctx, "ws/1/f"); !errors.Is(err, blob.ErrAccessDenied) {
		t.Errorf("Stat = %v, want ErrAccessDenied", err)
	}
	if err := b.Check(ctx); !errors.Is(err, blob.ErrAccessDenied) {
		t.Errorf("Check = %v, want ErrAccessDenied", err)
	}
	if strings.Contains(fmt.Sprint(b.Check(ctx)), "not-the-secret") {
		t.Error("an error string contains the secret key")
	}
}

func TestMissingBucket(t *testing.T) {
	srv := testServer(t)
	storagetest.MissingBucket(t, newBucket(t, srv.config("gw-test-no-such-bucket")))
}

// The endpoint resets every connection: every operation is
// ErrUnavailable once its tries are spent. The tries are production's,
// without the pauses between them.
func TestUnreachableIsUnavailable(t *testing.T) {
	cfg := s3.Config{
		Bucket:      "b",
		Endpoint:    "http://" + storagetest.RefusingAddr(t),
		PathStyle:   true,
		MaxAttempts: 2,
		Credentials: credentials.NewStaticCredentialsProvider("a", "s", ""),
	}
	b, err := s3.NewWithoutBackoff(t.Context(), cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	storagetest.Unreachable(t, b)
}

func TestConfigProblemsAllReported(t *testing.T) {
	cases := []struct {
		name  string
		cfg   s3.Config
		field []string
	}{
		{"empty", s3.Config{Endpoint: "http://127.0.0.1:1"}, []string{"s3.bucket"}},
		{"everything wrong", s3.Config{
			Bucket:       "a/b",
			Endpoint:     "ftp://x",
			Prefix:       "../up",
			PartSize:     1 << 20,
			BufferBudget: 1,
			MaxAttempts:  -1,
		}, []string{"s3.bucket", "s3.endpoint", "s3.prefix", "s3.part_size", "s3.buffer_budget", "s3.max_attempts"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s3.New(t.Context(), tc.cfg, zaptest.NewLogger(t))
			if !errors.Is(err, blob.ErrInvalidConfig) {
				t.Fatalf("New = %v, want ErrInvalidConfig", err)
			}
			for _, f := range tc.field {
				if !strings.Contains(err.Error(), f+":") {
					t.Errorf("error %q does not name %s", err, f)
				}
			}
		})
	}
}

// The server dies in the middle of a multipart upload: the upload fails
// with ErrUnavailable, and once the server is back the multipart upload
// whose abort failed is aborted, leaving nothing behind.
func TestServerStopsMidUpload(t *testing.T) {
	bin := testenv.Require(t, testenv.S3ServerVar)
	srv := server{access: "gwstoptest", secret: "gwstoptest-secret-key"}
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	srv.endpoint = "http://" + addr
	logFile, err := os.Create(filepath.Join(t.TempDir(), "versitygw.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	start := func() *exec.Cmd {
		cmd := exec.Command(bin, "--port", addr, "--quiet", "posix", dir)
		cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+srv.access, "ROOT_SECRET_KEY="+srv.secret)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		if err := cmd.Start(); err != nil {
			t.Fatalf("start versitygw: %v", err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		waitListening(t, addr)
		return cmd
	}
	cmd := start()

	name := "gw-stop-test"
	if _, err := srv.raw().CreateBucket(t.Context(), &awss3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}
	cfg := srv.config(name)
	cfg.MaxAttempts = 2
	cfg.PartTimeout = 20 * time.Second
	b := newBucket(t, cfg)

	// The upload stops past the first part: by then the multipart upload
	// exists and its first part is on its way.
	stop := func(t *testing.T) {
		cmd.Process.Kill()
		cmd.Wait()
	}
	restart := func(t *testing.T) {
		// The abort of the failed upload could not reach the server; it
		// waits for a retry.
		if n := b.OrphanCount(); n != 1 {
			t.Fatalf("%d aborts waiting for the server, want 1", n)
		}
		start()
		if left := b.RetryOrphans(t.Context()); left != 0 {
			t.Fatalf("%d aborts still pending with the server back", left)
		}
	}
	storagetest.StopsMidUpload(t, b, stop, restart)
}

// waitListening polls until addr accepts connections: the server gives no
// other signal that it is ready.
func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server at %s did not come up: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestComposeCrash(t *testing.T) {
	srv := testServer(t)
	cfg := srv.config(srv.createBucket(t))
	cfg.Prefix = "gateway"
	b := newBucket(t, cfg)
	storagetest.ComposeCrash(t, b, b.CrashMidCompose)
}

// BenchmarkCompose: 32 parts of 8 MiB composed, against the same 256 MiB
// uploaded as one object.
func BenchmarkCompose(b *testing.B) {
	srv := testServer(b)
	bucket := newBucket(b, srv.config(srv.createBucket(b)))
	storagetest.ComposeVsUpload(b, bucket, 32, 8*storagetest.MiB)
}

// Small sources are joined in part buffers from the Bucket's shared
// budget: however many parts a Compose streams at once, it holds no more
// than the budget, and gives it all back.
func TestComposeStreamsWithinTheBudget(t *testing.T) {
	srv := testServer(t)
	cfg := srv.config(srv.createBucket(t))
	cfg.BufferBudget = 2 * s3.MinPartSize
	b := newBucket(t, cfg)
	var keys []string
	var want []byte
	for i := range 48 {
		data := storagetest.Data(uint64(i), 500<<10+i)
		key := fmt.Sprintf("ws/1/part-%02d", i)
		storagetest.MustUpload(t, b, key, data)
		keys = append(keys, key)
		want = append(want, data...)
	}
	if _, err := b.Compose(t.Context(), "ws/1/f", keys, blob.UploadOptions{}); err != nil {
		t.Fatalf("Compose: %v", err)
	}
	storagetest.MustContain(t, b, "ws/1/f", want)
	if peak := b.PeakBufferBytes(); peak > cfg.BufferBudget || peak < s3.MinPartSize {
		t.Errorf("peak part-buffer memory %d bytes; want one buffer or more, within the budget of %d", peak, cfg.BufferBudget)
	}
	if n := b.BufferBytesInUse(); n != 0 {
		t.Errorf("%d bytes of part buffers still held after the compose", n)
	}
	storagetest.NoLeftovers(t, b, append([]string{"ws/1/f"}, keys...)...)
}

// A part whose first attempt fails is sent again with the same bytes,
// whether the server answered before reading the body (net/http may then
// still be writing it when the SDK returns, and its buffer goes back to
// the pool) or cut it off half-way; the parts in flight meanwhile keep
// theirs. The server checks each part's CRC32, and the object is read
// back.
func TestFailedPartsAreSentAgainWithTheirBytes(t *testing.T) {
	srv := testServer(t)
	for _, tc := range []struct {
		name string
		read int64 // bytes of the body read before the failure; -1 none
	}{
		{"answered-before-reading", -1},
		{"cut-mid-body", 3 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target, err := url.Parse(srv.endpoint)
			if err != nil {
				t.Fatal(err)
			}
			proxy := httputil.NewSingleHostReverseProxy(target)
			var mu sync.Mutex
			failed := map[string]bool{} // upload id and part number failed once
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				q := r.URL.Query()
				if r.Method == http.MethodPut && q.Has("partNumber") {
					part := q.Get("uploadId") + "/" + q.Get("partNumber")
					mu.Lock()
					first := !failed[part]
					failed[part] = true
					mu.Unlock()
					if first {
						if tc.read > 0 {
							io.CopyN(io.Discard, r.Body, tc.read)
						}
						w.WriteHeader(http.StatusServiceUnavailable)
						return
					}
				}
				proxy.ServeHTTP(w, r)
			}))
			defer front.Close()
			cfg := srv.config(srv.createBucket(t))
			cfg.Endpoint = front.URL
			cfg.BufferBudget = 4 * s3.MinPartSize
			b, err := s3.NewWithoutBackoff(t.Context(), cfg, zaptest.NewLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			var wg sync.WaitGroup
			for i := range 2 {
				wg.Go(func() {
					data := storagetest.Data(uint64(40+i), 4*s3.MinPartSize+321)
					key := fmt.Sprintf("ws/1/f%d", i)
					if _, err := b.Upload(t.Context(), key, storagetest.ChunkedReader(data), -1, blob.UploadOptions{}); err != nil {
						t.Errorf("Upload %d: %v", i, err)
						return
					}
					storagetest.MustContain(t, b, key, data)
				})
			}
			wg.Wait()
			mu.Lock()
			n := len(failed)
			mu.Unlock()
			if n != 2*5 {
				t.Errorf("%d parts failed once, want every part of both uploads (10)", n)
			}
			if n := b.BufferBytesInUse(); n != 0 {
				t.Errorf("%d buffer bytes still held after every upload returned", n)
			}
		})
	}
}
