package providers_test

import (
	"bufio"
	"context"
	"encoding/json"
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
	"testing"
	"time"

	"github.com/aigateway/gateway/backends/providers"
	"github.com/aigateway/gateway/backends/providers/providertest"
	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/policy/keys/seal"
	"go.uber.org/zap"
)

// BenchmarkList is the passthrough of GET /files?provider=...: one upstream
// list call for a page of 100 files (the edge's default limit). For each
// provider:
//
//   - standin: List against the provider's stand-in, in this process: it
//     speaks the wire protocol and builds every answer afresh, and its cost
//     is in the figures;
//   - replay: List against a server in a process of its own replaying the
//     stand-in's answer, bytes and headers: this process is the gateway's
//     side alone, and cpu-ns/op is the CPU it spent per call (goroutines,
//     garbage collector and system calls included), the figure of the
//     field report;
//   - replay-bare: the same request sent to the same server with a bare
//     http.Client, its answer read and dropped: the floor of the HTTP
//     round trip;
//   - replay-parallel, replay-bare-parallel: the same from 64 callers at
//     once, as on a busy replica, where the scheduler's cost of one call
//     waiting for its answer is shared.
//
// Compare cpu-ns/op, ns/op and allocs/op; run with -count to interleave
// rounds, and with -cpuprofile to see where the time goes.
func BenchmarkList(b *testing.B) {
	const nFiles = 100
	for _, pc := range cases {
		stand := pc.standIn(b)
		for i := range nFiles {
			stand.Seed(providertest.SeedFile{Filename: fmt.Sprintf("f%03d.txt", i), Size: 10,
				Open: func() io.Reader { return strings.NewReader("0123456789") }})
		}
		key := seal.NewSecret(stand.Key)
		q := files.ProviderListQuery{Limit: nFiles}
		replayURL := replayProcess(b, stand.BaseURL, listRequest(b, pc.name, stand.BaseURL, stand.Key, nFiles))

		list := func(baseURL string, parallel bool) func(b *testing.B) {
			return func(b *testing.B) {
				p, err := pc.provider(providers.Options{BaseURL: baseURL}, zap.NewNop())
				if err != nil {
					b.Fatal(err)
				}
				measure(b, parallel, func(ctx context.Context) error {
					page, err := p.List(ctx, key, q)
					if err == nil && len(page.Files) != nFiles {
						err = fmt.Errorf("listed %d files, want %d", len(page.Files), nFiles)
					}
					return err
				})
			}
		}
		bare := func(parallel bool) func(b *testing.B) {
			return func(b *testing.B) {
				req := listRequest(b, pc.name, replayURL, stand.Key, nFiles)
				c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
				defer c.CloseIdleConnections()
				measure(b, parallel, func(ctx context.Context) error {
					resp, err := c.Do(req.Clone(ctx))
					if err != nil {
						return err
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						return fmt.Errorf("replay answered %d", resp.StatusCode)
					}
					return nil
				})
			}
		}
		b.Run(pc.name+"/standin", list(stand.BaseURL, false))
		b.Run(pc.name+"/replay", list(replayURL, false))
		b.Run(pc.name+"/replay-bare", bare(false))
		b.Run(pc.name+"/replay-parallel", list(replayURL, true))
		b.Run(pc.name+"/replay-bare-parallel", bare(true))
	}
}

// measure runs call b.N times, from one caller or from 64 at once, and
// reports allocations and the CPU spent per call.
func measure(b *testing.B, parallel bool, call func(context.Context) error) {
	b.ReportAllocs()
	cpu := startCPU()
	if parallel {
		b.SetParallelism(32)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := call(context.Background()); err != nil {
					b.Error(err)
					return
				}
			}
		})
	} else {
		for b.Loop() {
			if err := call(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
	}
	cpu.report(b)
}

// cpuClock measures the CPU this process spends from startCPU on.
type cpuClock struct {
	start time.Duration
	ok    bool
}

func startCPU() cpuClock {
	t, ok := processCPU()
	return cpuClock{t, ok}
}

// report adds cpu-ns/op to the benchmark's results, where the system tells
// a process's CPU time.
func (c cpuClock) report(b *testing.B) {
	if t, ok := processCPU(); ok && c.ok && b.N > 0 {
		b.ReportMetric(float64(t-c.start)/float64(b.N), "cpu-ns/op")
	}
}

// listRequest is the request List sends for the first page of limit files,
// written out by hand.
func listRequest(b *testing.B, provider, baseURL, key string, limit int) *http.Request {
	b.Helper()
	var req *http.Request
	var err error
	switch provider {
	case providers.ProviderOpenAI:
		req, err = http.NewRequest(http.MethodGet, fmt.Sprintf("%s/files?limit=%d&order=desc", baseURL, limit), nil)
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+key)
		}
	case providers.ProviderAnthropic:
		req, err = http.NewRequest(http.MethodGet, fmt.Sprintf("%s/v1/files?limit=%d", baseURL, limit), nil)
		if err == nil {
			req.Header.Set("x-api-key", key)
			req.Header.Set("anthropic-version", "2023-06-01")
			req.Header.Set("anthropic-beta", "files-api-2025-04-14")
		}
	default:
		b.Fatalf("no list request for %s", provider)
	}
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	return req
}

// replayEnv names the file of the answer TestReplayProcess serves.
const replayEnv = "PROVIDERS_BENCH_REPLAY"

// recordedAnswer is an answer to replay.
type recordedAnswer struct {
	Status int
	Header http.Header
	Body   []byte
}

// replayProcess sends req to the stand-in at baseURL once and starts this
// test binary again, running TestReplayProcess, to answer any request
// with the same status, headers and body until the benchmark ends. It
// returns the replay's base URL, with the path of baseURL (/v1 or none).
func replayProcess(b *testing.B, baseURL string, req *http.Request) string {
	b.Helper()
	base, err := url.Parse(baseURL)
	if err != nil {
		b.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("recording the answer: %d %v", resp.StatusCode, err)
	}
	header := resp.Header.Clone()
	header.Del("Transfer-Encoding")
	header.Set("Content-Length", strconv.Itoa(len(body)))
	recorded, err := json.Marshal(recordedAnswer{resp.StatusCode, header, body})
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "answer.json")
	if err := os.WriteFile(path, recorded, 0o600); err != nil {
		b.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestReplayProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), replayEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	// Closing its stdin ends the replay.
	b.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("replay process: %v", err)
	}
	return strings.TrimSpace(line) + base.Path
}

// TestReplayProcess is the replay server of BenchmarkList, run by it in a
// process of its own: it prints its URL, then answers every request with
// the answer in the file named by $PROVIDERS_BENCH_REPLAY until its stdin
// ends.
func TestReplayProcess(t *testing.T) {
	path := os.Getenv(replayEnv)
	if path == "" {
		t.Skip("run by BenchmarkList")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var answer recordedAnswer
	if err := json.Unmarshal(raw, &answer); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		for k, v := range answer.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(answer.Status)
		_, _ = w.Write(answer.Body)
	})}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("http://%s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = srv.Close()
}
