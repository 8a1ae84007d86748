package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"
)

// partsLine prints the result of parts and s3parts: the whole (create to
// complete), the parts alone (the first sent to the last answered) and the
// completion alone, each as seconds and MB/s of the file's bytes.
func partsLine(w io.Writer, size int64, n int, whole, sent, complete time.Duration) {
	mbps := func(d time.Duration) float64 { return float64(size) / 1e6 / d.Seconds() }
	fmt.Fprintf(w, "uploads=1 bytes=%d parts=%d seconds=%.3f mbps=%.1f parts_seconds=%.3f parts_mbps=%.1f complete_seconds=%.3f complete_mbps=%.1f\n",
		size, n, whole.Seconds(), mbps(whole), sent.Seconds(), mbps(sent), complete.Seconds(), mbps(complete))
}

// partsConfig is what parts and s3parts share: the file, its parts and
// how many go at once.
type partsConfig struct {
	size, part int64
	conc       int
}

func (c partsConfig) count() int { return int((c.size + c.part - 1) / c.part) }

// span is the bytes of part i: [off, off+n).
func (c partsConfig) span(i int) (off, n int64) {
	off = int64(i) * c.part
	return off, min(c.part, c.size-off)
}

// eachPart runs send for every part, conc at a time, in order of parts
// (a worker takes the next part when it is done with one); the first
// error stops the parts not yet started.
func (c partsConfig) eachPart(ctx context.Context, send func(ctx context.Context, worker, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	next := make(chan int)
	go func() {
		defer close(next)
		for i := range c.count() {
			select {
			case next <- i:
			case <-gctx.Done():
				return
			}
		}
	}()
	for w := range min(c.conc, c.count()) {
		g.Go(func() error {
			for i := range next {
				if err := send(gctx, w, i); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// parts sends one file of -size bytes to the gateway's Uploads resource:
// create, parts of -part bytes -c at a time (each generated as it is sent,
// never held whole), complete with the part ids in order (and the file's
// md5 with -md5, computed before the clock starts). The answers are
// checked: the upload completed, its file of -size bytes.
func parts(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("parts", flag.ContinueOnError)
	base := fs.String("url", "", "the gateway's API base URL (…/api/v1)")
	key := fs.String("key", "", "bearer token")
	size := fs.Int64("size", 2<<30, "bytes of the file, header included")
	part := fs.Int64("part", 64<<20, "bytes of every part but the last")
	conc := fs.Int("c", 4, "parts sent at once")
	filename := fs.String("filename", "bench.pdf", "the upload's filename")
	purpose := fs.String("purpose", "assistants", "the upload's purpose")
	withMD5 := fs.Bool("md5", false, "send the file's md5 with the completion, for the gateway to check")
	timeout := fs.Duration("timeout", 30*time.Minute, "limit of the whole upload")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg := partsConfig{size: *size, part: *part, conc: *conc}
	if *base == "" || *conc < 1 || *part < 1 || *size < int64(len(pdfHeader)) {
		return errors.New("parts: -url is required, -c >= 1, -part >= 1, -size >= 9")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	block, err := newBlock()
	if err != nil {
		return err
	}
	sum := ""
	if *withMD5 {
		h := md5.New()
		if _, err := io.Copy(h, fileBytes(block, 0, *size)); err != nil {
			return err
		}
		sum = hex.EncodeToString(h.Sum(nil))
	}
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		DisableCompression:  true,
		MaxIdleConnsPerHost: *conc,
		WriteBufferSize:     256 << 10,
		ReadBufferSize:      16 << 10,
	}
	defer tr.CloseIdleConnections()
	api := &apiClient{http: &http.Client{Transport: tr}, base: strings.TrimSuffix(*base, "/"), key: *key}

	t0 := time.Now()
	var upload struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	err = api.postJSON(ctx, "/uploads", map[string]any{
		"bytes": *size, "filename": *filename, "mime_type": "application/pdf", "purpose": *purpose,
	}, &upload)
	if err != nil {
		return fmt.Errorf("parts: create: %w", err)
	}
	if upload.ID == "" || upload.Status != "pending" {
		return fmt.Errorf("parts: create: answered id %q, status %q", upload.ID, upload.Status)
	}
	t1 := time.Now()
	ids := make([]string, cfg.count())
	err = cfg.eachPart(ctx, func(ctx context.Context, _, i int) error {
		off, n := cfg.span(i)
		id, err := api.postPart(ctx, "/uploads/"+upload.ID+"/parts", fileBytes(block, off, n), n)
		if err != nil {
			return fmt.Errorf("part %d: %w", i, err)
		}
		ids[i] = id
		return nil
	})
	if err != nil {
		return fmt.Errorf("parts: %w", err)
	}
	t2 := time.Now()
	done := map[string]any{"part_ids": ids}
	if sum != "" {
		done["md5"] = sum
	}
	var completed struct {
		Status string `json:"status"`
		File   *struct {
			Bytes     *int64 `json:"bytes"`
			SizeBytes *int64 `json:"size_bytes"`
		} `json:"file"`
	}
	if err := api.postJSON(ctx, "/uploads/"+upload.ID+"/complete", done, &completed); err != nil {
		return fmt.Errorf("parts: complete: %w", err)
	}
	t3 := time.Now()
	if completed.Status != "completed" || completed.File == nil {
		return fmt.Errorf("parts: complete: status %q, file %v", completed.Status, completed.File)
	}
	if got := cmp.Or(completed.File.Bytes, completed.File.SizeBytes); got == nil || *got != *size {
		return fmt.Errorf("parts: complete: the file's size does not match %d", *size)
	}
	partsLine(stdout, *size, cfg.count(), t3.Sub(t0), t2.Sub(t1), t3.Sub(t2))
	return nil
}

// apiClient calls the gateway's API with a bearer key.
type apiClient struct {
	http      *http.Client
	base, key string
}

// postJSON posts in as JSON to path and decodes a 200 answer into out;
// any other status is an error carrying the answer.
func (c *apiClient) postJSON(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	return c.do(req, out)
}

// postPart sends n bytes of r as the multipart field data, with an exact
// Content-Length, and returns the part's id.
func (c *apiClient) postPart(ctx context.Context, path string, r io.Reader, n int64) (string, error) {
	head := "--" + boundary + "\r\n" +
		`Content-Disposition: form-data; name="data"; filename="blob"` + "\r\n" +
		"Content-Type: application/octet-stream\r\n\r\n"
	tail := "\r\n--" + boundary + "--\r\n"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path,
		io.MultiReader(strings.NewReader(head), r, strings.NewReader(tail)))
	if err != nil {
		return "", err
	}
	req.ContentLength = int64(len(head)) + n + int64(len(tail))
	req.Header.Set("Content-Type", "multipart/form-data; boundary="+boundary)
	var got struct {
		ID     string `json:"id"`
		Object string `json:"object"`
	}
	if err := c.do(req, &got); err != nil {
		return "", err
	}
	if got.ID == "" || got.Object != "upload.part" {
		return "", fmt.Errorf("answered id %q, object %q", got.ID, got.Object)
	}
	return got.ID, nil
}

func (c *apiClient) do(req *http.Request, out any) error {
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(answer)))
	}
	if err := json.Unmarshal(answer, out); err != nil {
		return fmt.Errorf("answer is not JSON: %q", answer)
	}
	return nil
}

// Of the gateway's S3 backend (backends/storage/s3), what s3parts copies.
const (
	// s3PartSize and s3PartsInFlight: a body of unknown length (a part as
	// it arrives) is stored as a multipart upload of 5 MiB parts with
	// CRC32, two in flight.
	s3PartSize      = 5 << 20
	s3PartsInFlight = 2
	// composeParallel: the UploadPartCopy requests of a Compose at once.
	composeParallel = 8
	// headParallel: the HEADs of a Compose's sources at once.
	headParallel = 32
)

// s3parts is the S3 path of parts without the gateway: every part stored
// as an object of its own as the gateway's S3 backend stores it (a
// multipart upload of 5 MiB CRC32 parts, two in flight), -c parts at once;
// then the gateway's assembly: a HEAD of every part (in parallel), one
// multipart upload of the file whose parts the server copies from the part
// objects (UploadPartCopy, eight at a time), and the part objects deleted
// one after another, as the gateway removes them before it answers. So
// gateway / s3parts is the gateway's own share of a resumable upload to
// S3. Every part is copied whole: a last part under 5 MiB, which the
// gateway would read and send, is copied too.
func s3parts(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("s3parts", flag.ContinueOnError)
	endpoint := fs.String("endpoint", "", "S3-compatible endpoint URL")
	bucketName := fs.String("bucket", "", "bucket")
	prefix := fs.String("prefix", "direct/", "key prefix of the part objects and the file")
	region := fs.String("region", "us-east-1", "region")
	size := fs.Int64("size", 2<<30, "bytes of the file, header included")
	part := fs.Int64("part", 64<<20, "bytes of every part but the last")
	conc := fs.Int("c", 4, "parts stored at once")
	timeout := fs.Duration("timeout", 30*time.Minute, "limit of the whole upload")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg := partsConfig{size: *size, part: *part, conc: *conc}
	if *endpoint == "" || *bucketName == "" || *conc < 1 || *part < s3PartSize || *size < int64(len(pdfHeader)) {
		return errors.New("s3parts: -endpoint and -bucket are required, -c >= 1, -part >= 5MiB, -size >= 9")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	client, err := s3Client(ctx, *endpoint, *region)
	if err != nil {
		return err
	}
	block, err := newBlock()
	if err != nil {
		return err
	}
	bufs := make([]chan []byte, min(cfg.conc, cfg.count()))
	for w := range bufs {
		bufs[w] = newBuffers(s3PartsInFlight, s3PartSize)
	}
	keys := make([]string, cfg.count())
	for i := range keys {
		keys[i] = fmt.Sprintf("%spart-%05d", *prefix, i)
	}
	dst := *prefix + "bench.pdf"

	if _, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: bucketName}); err != nil {
		return fmt.Errorf("s3parts: %w", err)
	}
	t0 := time.Now()
	err = cfg.eachPart(ctx, func(ctx context.Context, w, i int) error {
		off, n := cfg.span(i)
		return putMultipart(ctx, client, *bucketName, keys[i], "application/octet-stream", fileBytes(block, off, n), bufs[w])
	})
	if err != nil {
		return fmt.Errorf("s3parts: %w", err)
	}
	t1 := time.Now()
	if err := compose(ctx, client, *bucketName, dst, keys); err != nil {
		return fmt.Errorf("s3parts: %w", err)
	}
	for _, k := range keys {
		if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucketName, Key: aws.String(k)}); err != nil {
			return fmt.Errorf("s3parts: delete %s: %w", k, err)
		}
	}
	t2 := time.Now()
	head, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bucketName, Key: &dst})
	if err != nil {
		return fmt.Errorf("s3parts: %w", err)
	}
	if got := aws.ToInt64(head.ContentLength); got != *size {
		return fmt.Errorf("s3parts: %s holds %d bytes, not %d", dst, got, *size)
	}
	partsLine(stdout, *size, cfg.count(), t2.Sub(t0), t1.Sub(t0), t2.Sub(t1))
	return nil
}

// compose assembles srcs into dst as the gateway's S3 backend does when
// every source is at least 5 MiB: their sizes by HEAD, then a multipart
// upload whose parts the server copies, one per source.
func compose(ctx context.Context, client *s3.Client, bucketName, dst string, srcs []string) error {
	sizes := make([]int64, len(srcs))
	var g errgroup.Group
	g.SetLimit(headParallel)
	for i, src := range srcs {
		g.Go(func() error {
			out, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucketName, Key: &src})
			if err != nil {
				return fmt.Errorf("head %s: %w", src, err)
			}
			sizes[i] = aws.ToInt64(out.ContentLength)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	out, err := client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket: &bucketName, Key: &dst, ContentType: aws.String("application/pdf"),
	})
	if err != nil {
		return fmt.Errorf("create %s: %w", dst, err)
	}
	completed := make([]types.CompletedPart, len(srcs))
	g.SetLimit(composeParallel)
	for i, src := range srcs {
		g.Go(func() error {
			r, err := client.UploadPartCopy(ctx, &s3.UploadPartCopyInput{
				Bucket: &bucketName, Key: &dst, UploadId: out.UploadId, PartNumber: aws.Int32(int32(i + 1)),
				CopySource:      aws.String(bucketName + "/" + src),
				CopySourceRange: aws.String(fmt.Sprintf("bytes=0-%d", sizes[i]-1)),
			})
			if err != nil {
				return fmt.Errorf("copy %s: %w", src, err)
			}
			if r.CopyPartResult == nil {
				return fmt.Errorf("copy %s: no result", src)
			}
			completed[i] = types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: r.CopyPartResult.ETag}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if _, err := client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &bucketName, Key: &dst, UploadId: out.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: completed},
	}); err != nil {
		return fmt.Errorf("complete %s: %w", dst, err)
	}
	return nil
}
