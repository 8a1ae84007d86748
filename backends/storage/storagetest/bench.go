package storagetest

import (
	"bytes"
	"testing"
	"time"

	"github.com/aigateway/gateway/files/blob"
)

// ComposeVsUpload measures, on bucket, a Compose of n sources of size
// bytes each against an Upload of the same bytes as one object, in the
// same rounds (alternating which goes first), so the two share the
// machine's and the server's state. It reports each one's milliseconds
// per round and their ratio, compose/upload: below 1, composing the parts
// costs less than sending the file again would.
func ComposeVsUpload(b *testing.B, bucket blob.Bucket, n, size int) {
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = size
	}
	ws := newWorkspace()
	srcs := uploadSources(b, bucket, ws, 1, sizes...)
	keys, whole := keysOf(srcs), concat(srcs)
	composed, uploaded := "ws/"+ws+"/composed", "ws/"+ws+"/uploaded"
	var composeTime, uploadTime time.Duration
	compose := func() {
		start := time.Now()
		if _, err := bucket.Compose(opContext(b), composed, keys, blob.UploadOptions{}); err != nil {
			b.Fatalf("Compose: %v", err)
		}
		composeTime += time.Since(start)
	}
	upload := func() {
		start := time.Now()
		if _, err := bucket.Upload(opContext(b), uploaded, bytes.NewReader(whole), int64(len(whole)), blob.UploadOptions{}); err != nil {
			b.Fatalf("Upload: %v", err)
		}
		uploadTime += time.Since(start)
	}
	rounds := 0
	for b.Loop() {
		if rounds%2 == 0 {
			compose()
			upload()
		} else {
			upload()
			compose()
		}
		rounds++
	}
	MustContain(b, bucket, composed, whole)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(rounds) }
	b.ReportMetric(ms(composeTime), "compose-ms/op")
	b.ReportMetric(ms(uploadTime), "upload-ms/op")
	b.ReportMetric(composeTime.Seconds()/uploadTime.Seconds(), "compose/upload")
}
