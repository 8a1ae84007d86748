package storagetest

import (
	"bytes"
	"context"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/aigateway/gateway/files/blob"
)

// ComposeVsUpload measures, on bucket, a Compose of n sources of size
// bytes each against two ways of storing the same bytes without it, in the
// same rounds (each round in another order), so that all three share the
// machine's and the server's state:
//
//   - upload: an Upload of the bytes from memory, as if the client sent the
//     whole file again;
//   - readback: an Upload of the sources read back from the bucket, one
//     after the other: what completing a resumable upload costs a backend
//     without a server-side concatenation.
//
// It reports each one's wall time and the test process's CPU time (user
// and system: what the gateway would spend) per round, and the ratios
// compose/upload and compose/readback of both.
func ComposeVsUpload(b *testing.B, bucket blob.Bucket, n, size int) {
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = size
	}
	ws := newWorkspace()
	srcs := uploadSources(b, bucket, ws, 1, sizes...)
	keys, whole := keysOf(srcs), concat(srcs)
	composed, uploaded, readback := "ws/"+ws+"/composed", "ws/"+ws+"/uploaded", "ws/"+ws+"/readback"

	type cost struct{ wall, cpu time.Duration }
	var costs [3]cost
	measure := func(i int, op func() error) {
		cpu0, start := cpuTime(b), time.Now()
		if err := op(); err != nil {
			b.Fatalf("%s", err)
		}
		costs[i].wall += time.Since(start)
		costs[i].cpu += cpuTime(b) - cpu0
	}
	ops := [3]func(){
		func() {
			measure(0, func() error {
				_, err := bucket.Compose(opContext(b), composed, keys, blob.UploadOptions{})
				return err
			})
		},
		func() {
			measure(1, func() error {
				_, err := bucket.Upload(opContext(b), uploaded, bytes.NewReader(whole), int64(len(whole)), blob.UploadOptions{})
				return err
			})
		},
		func() {
			measure(2, func() error {
				r := &sourcesReader{ctx: opContext(b), bucket: bucket, keys: keys}
				defer r.close()
				_, err := bucket.Upload(opContext(b), readback, r, int64(len(whole)), blob.UploadOptions{})
				return err
			})
		},
	}
	rounds := 0
	for b.Loop() {
		for k := range 3 {
			ops[(rounds+k)%3]()
		}
		rounds++
	}
	MustContain(b, bucket, composed, whole)
	MustContain(b, bucket, readback, whole)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(rounds) }
	for i, name := range []string{"compose", "upload", "readback"} {
		b.ReportMetric(ms(costs[i].wall), name+"-ms/op")
		b.ReportMetric(ms(costs[i].cpu), name+"-cpu-ms/op")
	}
	ratio := func(x, y time.Duration) float64 { return x.Seconds() / y.Seconds() }
	b.ReportMetric(ratio(costs[0].wall, costs[1].wall), "compose/upload")
	b.ReportMetric(ratio(costs[0].wall, costs[2].wall), "compose/readback")
	b.ReportMetric(ratio(costs[0].cpu, costs[1].cpu), "cpu-compose/upload")
	b.ReportMetric(ratio(costs[0].cpu, costs[2].cpu), "cpu-compose/readback")
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sourcesReader reads the objects keys of bucket one after the other,
// opening each when the previous one ends.
type sourcesReader struct {
	ctx    context.Context
	bucket blob.Bucket
	keys   []string
	cur    io.ReadCloser
}

func (r *sourcesReader) Read(p []byte) (int, error) {
	for {
		if r.cur == nil {
			if len(r.keys) == 0 {
				return 0, io.EOF
			}
			rc, err := r.bucket.Open(r.ctx, r.keys[0])
			if err != nil {
				return 0, err
			}
			r.cur, r.keys = rc, r.keys[1:]
		}
		n, err := r.cur.Read(p)
		if err == io.EOF {
			r.cur.Close()
			r.cur = nil
			if n == 0 {
				continue
			}
			err = nil
		}
		return n, err
	}
}

func (r *sourcesReader) close() {
	if r.cur != nil {
		r.cur.Close()
	}
}
