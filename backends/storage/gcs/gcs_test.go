package gcs_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gstorage "cloud.google.com/go/storage"
	"go.uber.org/zap/zaptest"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/aigateway/gateway/backends/storage/gcs"
	"github.com/aigateway/gateway/backends/storage/storagetest"
	"github.com/aigateway/gateway/files/blob"
	"github.com/aigateway/gateway/internal/testenv"
)

// rawClient is a plain client of the emulator at endpoint, to set up
// buckets and look behind the Bucket's back.
func rawClient(t testing.TB, endpoint string) *gstorage.Client {
	t.Helper()
	c, err := gstorage.NewClient(t.Context(), option.WithEndpoint(endpoint), option.WithoutAuthentication(), gstorage.WithJSONReads())
	if err != nil {
		t.Fatalf("gstorage.NewClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// createBucket makes a bucket with a unique name, emptied and removed when
// the test ends.
func createBucket(t testing.TB, endpoint string) string {
	t.Helper()
	var rnd [6]byte
	rand.Read(rnd[:])
	name := "gw-test-" + hex.EncodeToString(rnd[:])
	c := rawClient(t, endpoint)
	if err := c.Bucket(name).Create(t.Context(), "test-project", nil); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		it := c.Bucket(name).Objects(ctx, nil)
		for {
			attrs, err := it.Next()
			if err != nil {
				break
			}
			c.Bucket(name).Object(attrs.Name).Delete(ctx)
		}
		c.Bucket(name).Delete(ctx)
	})
	return name
}

func newBucket(t testing.TB, cfg gcs.Config) *gcs.Bucket {
	t.Helper()
	b, err := gcs.New(t.Context(), cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestContract(t *testing.T) {
	endpoint := testenv.Require(t, testenv.GCSEndpointVar)
	storagetest.Run(t, func(t *testing.T) blob.Bucket {
		// A small chunk makes the suite's bodies (up to 12 MiB: the
		// emulator holds whole uploads in memory) resumable uploads of
		// several chunks.
		return newBucket(t, gcs.Config{Bucket: createBucket(t, endpoint), Endpoint: endpoint, Prefix: "gateway", ChunkSize: 1 << 20})
	}, storagetest.UploadsLeaveNothingPending())
}

// Keys land under the prefix, and the Bucket sees nothing outside it; the
// storage behind its back is the GCS bucket seen by a plain client.
func TestPrefix(t *testing.T) {
	endpoint := testenv.Require(t, testenv.GCSEndpointVar)
	name := createBucket(t, endpoint)
	raw := rawClient(t, endpoint).Bucket(name)
	storagetest.Prefix(t, storagetest.PrefixStore{
		NewBucket: func(t *testing.T, prefix string) blob.Bucket {
			return newBucket(t, gcs.Config{Bucket: name, Endpoint: endpoint, Prefix: prefix})
		},
		Put: func(t *testing.T, key string, data []byte) {
			w := raw.Object(key).NewWriter(t.Context())
			if _, err := w.Write(data); err != nil {
				t.Fatalf("write %s: %v", key, err)
			}
			if err := w.Close(); err != nil {
				t.Fatalf("write %s: %v", key, err)
			}
		},
		Get: func(t *testing.T, key string) ([]byte, bool) {
			r, err := raw.Object(key).NewReader(t.Context())
			if errors.Is(err, gstorage.ErrObjectNotExist) {
				return nil, false
			}
			if err != nil {
				t.Fatalf("read %s: %v", key, err)
			}
			defer r.Close()
			data, err := io.ReadAll(r)
			if err != nil {
				t.Fatalf("read %s: %v", key, err)
			}
			return data, true
		},
	})
}

func TestContentTypeStored(t *testing.T) {
	endpoint := testenv.Require(t, testenv.GCSEndpointVar)
	b := newBucket(t, gcs.Config{Bucket: createBucket(t, endpoint), Endpoint: endpoint})
	for _, tc := range []struct{ given, want string }{{"application/pdf", "application/pdf"}, {"", "application/octet-stream"}} {
		obj, err := b.Upload(t.Context(), "ws/1/f", strings.NewReader("%PDF-1.7"), 8, blob.UploadOptions{ContentType: tc.given})
		if err != nil {
			t.Fatalf("Upload: %v", err)
		}
		st, err := b.Stat(t.Context(), "ws/1/f")
		if err != nil || st.ContentType != tc.want || obj.ContentType != tc.want {
			t.Errorf("content type given %q: Upload says %q, Stat says %q (%v); want %q", tc.given, obj.ContentType, st.ContentType, err, tc.want)
		}
	}
}

func TestMissingBucket(t *testing.T) {
	endpoint := testenv.Require(t, testenv.GCSEndpointVar)
	storagetest.MissingBucket(t, newBucket(t, gcs.Config{Bucket: "gw-test-no-such-bucket", Endpoint: endpoint}))
}

// The endpoint resets every connection: every operation is ErrUnavailable
// once its tries are spent (an upload's bounded by ChunkRetryDeadline).
// The tries are production's, without the pauses between them.
func TestUnreachableIsUnavailable(t *testing.T) {
	b, err := gcs.NewWithoutWaits(t.Context(), gcs.Config{
		Bucket:      "b",
		Endpoint:    "http://" + storagetest.RefusingAddr(t) + "/storage/v1/",
		MaxAttempts: 2,
	}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	storagetest.Unreachable(t, b)
}

func TestConfigProblemsAllReported(t *testing.T) {
	_, err := gcs.New(t.Context(), gcs.Config{Endpoint: "ftp://x", Prefix: "/abs", ChunkSize: 1000, MaxAttempts: -1}, zaptest.NewLogger(t))
	if !errors.Is(err, blob.ErrInvalidConfig) {
		t.Fatalf("New = %v, want ErrInvalidConfig", err)
	}
	for _, f := range []string{"gcs.bucket", "gcs.endpoint", "gcs.prefix", "gcs.chunk_size", "gcs.max_attempts"} {
		if !strings.Contains(err.Error(), f+":") {
			t.Errorf("error %q does not name %s", err, f)
		}
	}
}

// The emulator dies in the middle of a resumable upload: the upload fails
// with ErrUnavailable, and once the emulator is back there is no object.
func TestServerStopsMidUpload(t *testing.T) {
	bin := testenv.Require(t, testenv.GCSServerVar)
	dir := t.TempDir()
	addr := closedAddr(t)
	host, port, _ := net.SplitHostPort(addr)
	endpoint := "http://" + addr + "/storage/v1/"
	logFile, err := os.Create(filepath.Join(t.TempDir(), "fake-gcs-server.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	start := func() *exec.Cmd {
		cmd := exec.Command(bin, "-scheme", "http", "-host", host, "-port", port, "-public-host", addr,
			"-backend", "filesystem", "-filesystem-root", dir, "-log-level", "warn")
		cmd.Stdout, cmd.Stderr = logFile, logFile
		if err := cmd.Start(); err != nil {
			t.Fatalf("start fake-gcs-server: %v", err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		waitListening(t, addr)
		return cmd
	}
	cmd := start()
	// The emulator's data lives in dir and dies with the test: no cleanup.
	name := "gw-stop-test"
	if err := rawClient(t, endpoint).Bucket(name).Create(t.Context(), "test-project", nil); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	b := newBucket(t, gcs.Config{
		Bucket:             name,
		Endpoint:           endpoint,
		ChunkSize:          256 << 10,
		ChunkRetryDeadline: 2 * time.Second,
		MaxAttempts:        2,
	})

	// The upload stops past many chunks: the resumable upload is under way.
	stop := func(t *testing.T) {
		cmd.Process.Kill()
		cmd.Wait()
	}
	storagetest.StopsMidUpload(t, b, stop, func(t *testing.T) { start() })
	// Nothing under any name, not only under the key the Bucket would use.
	it := rawClient(t, endpoint).Bucket(name).Objects(t.Context(), nil)
	if attrs, err := it.Next(); !errors.Is(err, iterator.Done) {
		t.Errorf("bucket not empty: %v, %v", attrs, err)
	}
}

// closedAddr returns a loopback address nothing listens on (for a moment).
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
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
			t.Fatalf("server at %s did not come up: %v", addr, fmt.Errorf("%w", err))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestComposeCrash(t *testing.T) {
	endpoint := testenv.Require(t, testenv.GCSEndpointVar)
	b := newBucket(t, gcs.Config{Bucket: createBucket(t, endpoint), Endpoint: endpoint, Prefix: "gateway"})
	storagetest.ComposeCrash(t, b, b.CrashMidCompose)
}

// BenchmarkCompose: 32 parts of 8 MiB composed, against the same 256 MiB
// uploaded as one object. (The emulator holds a whole upload in memory:
// about 1.5 GB for this one.)
func BenchmarkCompose(b *testing.B) {
	endpoint := testenv.Require(b, testenv.GCSEndpointVar)
	bucket := newBucket(b, gcs.Config{Bucket: createBucket(b, endpoint), Endpoint: endpoint})
	storagetest.ComposeVsUpload(b, bucket, 32, 8*storagetest.MiB)
}
