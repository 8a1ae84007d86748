package e2e

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aigateway/gateway/backends/sweeper"
	"github.com/aigateway/gateway/files/blob"
	"github.com/aigateway/gateway/internal/testenv"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestSweeperOnRealStorage: against every bucket backend and both
// databases, the sweeper removes an object without a record and (on S3) an
// unfinished multipart upload once past the grace, keeps recorded objects,
// and reports a record whose object is missing without dropping it.
func TestSweeperOnRealStorage(t *testing.T) {
	t.Parallel() // most of it is waiting out the grace, six times
	for _, st := range storageCases() {
		for _, ms := range metadataStores() {
			t.Run(st.name+"/"+ms.name, func(t *testing.T) {
				t.Parallel()
				testSweeperOnRealStorage(t, st, ms)
			})
		}
	}
}

func testSweeperOnRealStorage(t *testing.T, st fileStorage, ms storeCase) {
	cfg := fileTestConfig(t)
	st.configure(t, &cfg)
	ms.configure(t, &cfg)
	cfg.Sweeper.Interval = 0 // this test runs the passes itself
	e := newFileEnv(t, cfg)
	key, ws := e.standardKey(t, "alice")
	ctx := context.Background()

	var ids []string
	for _, name := range []string{"kept.txt", "lost.txt"} {
		data := fileText(10 * fileKiB)
		resp, body := e.upload(t, key, "", nil, name, data)
		ids = append(ids, fileWantUploaded(t, resp, body, "service", name, data, "text/plain"))
	}
	kept, lost := e.record(t, ws, ids[0]), e.record(t, ws, ids[1])
	if err := e.bucket.Delete(ctx, lost.ObjectKey); err != nil {
		t.Fatal(err)
	}
	orphan := "ws/" + ws + "/file-orphanedbyacrash00000"
	if _, err := e.bucket.Upload(ctx, orphan, bytes.NewReader(fileText(fileKiB)), fileKiB, blob.UploadOptions{}); err != nil {
		t.Fatal(err)
	}
	if cfg.Storage.Backend == "s3" {
		client := fileS3Client(testenv.Require(t, testenv.S3EndpointVar),
			testenv.Require(t, testenv.S3AccessKeyVar), testenv.Require(t, testenv.S3SecretKeyVar))
		if _, err := client.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{
			Bucket: aws.String(cfg.Storage.S3.Bucket), Key: aws.String("ws/" + ws + "/file-unfinishedbyacrash000"),
		}); err != nil {
			t.Fatal(err)
		}
	}

	// Long enough that the first pass, right after the uploads, comes within
	// it on a loaded machine; short enough for the test to wait it out.
	const grace = 3 * time.Second
	sw := sweeper.New(sweeper.Config{Interval: time.Hour, Grace: grace, Batch: 100, Backend: cfg.Storage.Backend}, e.store, e.bucket, nil, nil)
	first := sw.Sweep(ctx) // all of it younger than the grace
	if first.Objects != 0 || first.Pending != 0 || first.Errors != 0 || first.Missing != 1 {
		t.Fatalf("first pass = %+v; want only the missing object reported", first)
	}
	var total sweeper.Result
	waitFor(t, 30*time.Second, "the sweeper to remove the leftovers", func() bool {
		r := sw.Sweep(ctx)
		total.Objects += r.Objects
		total.Pending += r.Pending
		total.Errors += r.Errors
		_, err := e.bucket.Stat(ctx, orphan)
		pending := 0
		if pl, ok := e.bucket.(blob.Pending); ok {
			p, _ := pl.PendingUploads(ctx)
			pending = len(p)
		}
		return errors.Is(err, blob.ErrNotFound) && pending == 0
	})
	if total.Objects != 1 || total.Errors != 0 {
		t.Errorf("passes removed %d objects with %d errors, want the orphan alone", total.Objects, total.Errors)
	}
	if cfg.Storage.Backend == "s3" && total.Pending != 1 {
		t.Errorf("passes aborted %d unfinished uploads, want 1", total.Pending)
	}
	if _, err := e.bucket.Stat(ctx, kept.ObjectKey); err != nil {
		t.Errorf("a recorded object was touched: %v", err)
	}
	if _, err := e.store.FileByID(ctx, ws, lost.ID); err != nil {
		t.Errorf("the record whose object is missing was dropped: %v", err)
	}
}
