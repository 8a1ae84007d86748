package e2e

import (
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/policy/keys"
)

// BenchmarkUploadStream: uploads of 32 MiB through the whole gateway on the
// embedded default (fs backend on the test's disk, SQLite), one at a time
// and eight at once, beside the baseline measured in the same run: a bare
// net/http handler that streams the multipart file part into a file and
// fsyncs it (what bench/sink does). Both get the same requests from the same
// client over loopback TCP. Reported: MB/s of the batch, and the process's
// CPU seconds per GB (client included, the same client for both), so the
// gateway's own cost shows as the difference.
func BenchmarkUploadStream(b *testing.B) {
	const size = 32 << 20
	dir := b.TempDir()
	cfg := configs.Default()
	cfg.Metadata = configs.Metadata{Driver: "sqlite", DSN: filepath.Join(dir, "gateway.db")}
	cfg.Storage.FS.Dir = filepath.Join(dir, "files")
	cfg.Catalog.Path = "../../configs/models.yaml"
	cfg.Limits.Rate.Files = configs.Rate{Requests: 1 << 30, Per: time.Second, Burst: 1 << 30}
	cfg.Limits.UploadsInFlightPerKey = 64
	cfg.Limits.UploadBytes = configs.ByteBudget{Bytes: 1 << 50, Per: time.Hour}
	cfg.Limits.WorkspaceStorageBytes = 1 << 50
	rt, a := buildApp(b, cfg, io.Discard)
	gw := httptest.NewServer(a.Handler())
	b.Cleanup(func() { gw.Close(); a.WaitUploads(); _ = a.Close(); _ = rt.Close() })
	key, _, err := rt.CreateKey(context.Background(), keys.NewKeyRequest{Name: "bench", User: "alice", Role: keys.RoleStandard})
	if err != nil {
		b.Fatal(err)
	}
	sinkDir := filepath.Join(dir, "sink")
	if err := os.MkdirAll(sinkDir, 0o750); err != nil {
		b.Fatal(err)
	}
	sink := httptest.NewServer(&uploadSink{dir: sinkDir})
	b.Cleanup(sink.Close)

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	for _, conc := range []int{1, 8} {
		for _, target := range []struct{ name, url string }{{"sink", sink.URL}, {"gateway", gw.URL + "/api/v1/files"}} {
			b.Run(fmt.Sprintf("%s/%d", target.name, conc), func(b *testing.B) {
				b.SetBytes(size * int64(conc))
				cpu0 := processCPU()
				start := time.Now()
				for b.Loop() {
					var wg sync.WaitGroup
					for range conc {
						wg.Go(func() {
							if err := postFile(client, target.url, key, size); err != nil {
								b.Error(err)
							}
						})
					}
					wg.Wait()
				}
				elapsed, cpu := time.Since(start), processCPU()-cpu0
				gb := float64(b.N*conc*size) / 1e9
				b.ReportMetric(gb*1e3/elapsed.Seconds(), "MB/s")
				b.ReportMetric(cpu.Seconds()/gb, "cpu-s/GB")
			})
		}
	}
}

// postFile sends one multipart upload of size bytes ("%PDF-1.7\n" and
// pseudo-random bytes), generated as it is sent, with an exact
// Content-Length, and checks the answer.
func postFile(client *http.Client, url, key string, size int) error {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	head := "--" + mw.Boundary() + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f.pdf\"\r\nContent-Type: application/pdf\r\n\r\n"
	tail := "\r\n--" + mw.Boundary() + "--\r\n"
	go func() {
		_, _ = io.WriteString(pw, head)
		_, _ = io.WriteString(pw, "%PDF-1.7\n")
		left := size - len("%PDF-1.7\n")
		for left > 0 {
			n := min(left, len(benchBlock))
			if _, err := pw.Write(benchBlock[:n]); err != nil {
				return
			}
			left -= n
		}
		_, _ = io.WriteString(pw, tail)
		pw.Close()
	}()
	req, err := http.NewRequest("POST", url, pr)
	if err != nil {
		return err
	}
	req.ContentLength = int64(len(head) + size + len(tail))
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("upload: %d %s", res.StatusCode, body)
	}
	return nil
}

// benchBlock is 1 MiB of pseudo-random bytes, repeated to make a file.
var benchBlock = func() []byte {
	b := make([]byte, 1<<20)
	x := uint64(0x9E3779B97F4A7C15)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}()

// uploadSink is the baseline: the multipart file part streamed into a new
// file, fsynced; nothing else.
type uploadSink struct {
	dir string
	seq atomic.Int64
}

func (s *uploadSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	mr, err := r.MultipartReader()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	part, err := mr.NextPart()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	name := filepath.Join(s.dir, strconv.FormatInt(s.seq.Add(1), 10))
	f, err := os.Create(name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer os.Remove(name)
	buf := make([]byte, 256<<10)
	n, err := io.CopyBuffer(struct{ io.Writer }{f}, part, buf)
	if err == nil {
		err = f.Sync()
	}
	f.Close()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	fmt.Fprintf(w, "{\"size\":%d}\n", n)
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
