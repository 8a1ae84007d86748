// Command uploader is the load client of bench/uploads.sh. It posts files
// as multipart/form-data, the body generated on the fly (never held in
// memory whole) and sent with an exact Content-Length, so the gateway and
// the baseline sink receive byte-for-byte the same requests.
//
//	uploader upload -url http://127.0.0.1:8080/api/v1/files -key sk-gw-… \
//	                -size 104857600 -c 8
//	uploader bucket -endpoint http://127.0.0.1:9000 -bucket bench
//	uploader s3put -endpoint http://127.0.0.1:9000 -bucket bench -size 104857600
//	uploader parts -url http://127.0.0.1:8080/api/v1 -key sk-gw-… \
//	               -size 2147483648 -part 67108864 -c 4
//	uploader s3parts -endpoint http://127.0.0.1:9000 -bucket bench \
//	                 -size 2147483648 -part 67108864 -c 4
//
// upload sends -n uploads (default -c), -c at a time, each of one file of -size bytes: the
// header "%PDF-1.7\n" (so the gateway's type detection accepts it as a PDF)
// followed by a 1 MiB block of pseudo-random bytes repeated. Every upload
// must answer 200 with the size it stored ("size_bytes" from the gateway,
// "size" from the sink, or "body_bytes", the whole body, from the sink's null
// mode, or "bytes" from an OpenAI Files API); anything else is an error.
// -purpose adds a purpose field before the file part, -header any header.
// It prints one line of key=value pairs (MB = 10^6 bytes):
//
//	uploads=8 bytes=838860800 seconds=2.104 mbps=398.7 min_mbps=50.1 max_mbps=52.3
//
// mbps is the aggregate (all bytes over the wall time of the whole batch);
// min/max_mbps are of single uploads, each timed from sending the request
// to reading the whole answer.
//
// s3put sends the same file straight to an S3 server, as the gateway's S3
// backend would (see s3put below), and prints the same line.
//
// parts sends one file as a resumable upload (parts.go): create, parts of
// -part bytes -c at a time, complete. s3parts does the same work straight
// to an S3 server, the way the gateway's S3 backend stores and assembles
// the parts.
//
// bucket creates an S3 bucket (path-style, credentials from the AWS SDK's
// standard chain, e.g. AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY); one that
// already exists and is ours is fine.
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"
)

const (
	pdfHeader = "%PDF-1.7\n"
	boundary  = "uploadbench7f3a9c2e51d04b86"
	blockSize = 1 << 20
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "uploader:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: uploader upload|bucket|s3put|parts|s3parts [flags]")
	}
	switch args[0] {
	case "upload":
		return upload(ctx, args[1:], stdout)
	case "bucket":
		return bucket(ctx, args[1:])
	case "s3put":
		return s3put(ctx, args[1:], stdout)
	case "parts":
		return parts(ctx, args[1:], stdout)
	case "s3parts":
		return s3parts(ctx, args[1:], stdout)
	default:
		return fmt.Errorf("unknown command %q (want upload, bucket, s3put, parts or s3parts)", args[0])
	}
}

func upload(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("upload", flag.ContinueOnError)
	url := fs.String("url", "", "URL to POST to")
	key := fs.String("key", "", "bearer token (optional)")
	size := fs.Int64("size", 100<<20, "bytes of each file, header included")
	conc := fs.Int("c", 1, "concurrent uploads")
	count := fs.Int("n", 0, "uploads in all, -c at a time (default -c)")
	filename := fs.String("filename", "bench.pdf", "filename of the file part")
	purpose := fs.String("purpose", "", "a purpose field sent before the file part (OpenAI's Files API requires one)")
	var headers headerFlags
	fs.Var(&headers, "header", `a header of every request, "Name: value" (repeatable)`)
	timeout := fs.Duration("timeout", 10*time.Minute, "limit of the whole batch")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *count == 0 {
		*count = *conc
	}
	if *url == "" || *conc < 1 || *count < 1 || *size < int64(len(pdfHeader)) {
		return errors.New("upload: -url is required, -c >= 1, -n >= 1, -size >= 9")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	block, err := newBlock()
	if err != nil {
		return err
	}

	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		DisableCompression:  true,
		MaxIdleConnsPerHost: *conc,
		WriteBufferSize:     256 << 10,
		ReadBufferSize:      16 << 10,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	type result struct {
		dur time.Duration
		err error
	}
	results := make([]result, *count)
	var wg sync.WaitGroup
	startGate := make(chan struct{})
	var next atomic.Int64
	for range min(*conc, *count) {
		wg.Go(func() {
			<-startGate
			for i := int(next.Add(1) - 1); i < *count; i = int(next.Add(1) - 1) {
				t0 := time.Now()
				err := post(ctx, client, form{*url, *key, *filename, *purpose, headers}, *size, block)
				results[i] = result{dur: time.Since(t0), err: err}
			}
		})
	}
	t0 := time.Now()
	close(startGate)
	wg.Wait()
	wall := time.Since(t0)

	var errs []error
	minMB, maxMB := 0.0, 0.0
	for i, r := range results {
		if r.err != nil {
			errs = append(errs, fmt.Errorf("upload %d: %w", i, r.err))
			continue
		}
		mb := float64(*size) / 1e6 / r.dur.Seconds()
		if minMB == 0 || mb < minMB {
			minMB = mb
		}
		maxMB = max(maxMB, mb)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	total := *size * int64(*count)
	fmt.Fprintf(stdout, "uploads=%d bytes=%d seconds=%.3f mbps=%.1f min_mbps=%.1f max_mbps=%.1f\n",
		*count, total, wall.Seconds(), float64(total)/1e6/wall.Seconds(), minMB, maxMB)
	return nil
}

// newBlock returns the 1 MiB of pseudo-random bytes every file repeats, the
// same in every run.
func newBlock() ([]byte, error) {
	block := make([]byte, blockSize)
	rng := rand.NewChaCha8([32]byte{'u', 'p', 'l', 'o', 'a', 'd', 's'})
	_, _ = rng.Read(block)
	// The block is random, but make sure no slice of it can close the part.
	if strings.Contains(string(block), "--"+boundary) {
		return nil, errors.New("the random block contains the boundary")
	}
	return block, nil
}

// form is what post sends besides the file's bytes.
type form struct {
	url, key, filename, purpose string
	headers                     headerFlags
}

// headerFlags collects -header flags.
type headerFlags [][2]string

func (h *headerFlags) String() string { return fmt.Sprint(*h) }

func (h *headerFlags) Set(v string) error {
	name, value, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("header %q: want \"Name: value\"", v)
	}
	*h = append(*h, [2]string{strings.TrimSpace(name), strings.TrimSpace(value)})
	return nil
}

// post sends one file and checks the answer: 200 and the size stored.
func post(ctx context.Context, client *http.Client, f form, size int64, block []byte) error {
	head := ""
	if f.purpose != "" {
		head = "--" + boundary + "\r\n" +
			`Content-Disposition: form-data; name="purpose"` + "\r\n\r\n" + f.purpose + "\r\n"
	}
	head += "--" + boundary + "\r\n" +
		`Content-Disposition: form-data; name="file"; filename="` + f.filename + "\"\r\n" +
		"Content-Type: application/pdf\r\n\r\n" + pdfHeader
	tail := "\r\n--" + boundary + "--\r\n"
	body := io.MultiReader(
		strings.NewReader(head),
		&pattern{block: block, left: size - int64(len(pdfHeader))},
		strings.NewReader(tail),
	)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url, body)
	if err != nil {
		return err
	}
	req.ContentLength = int64(len(head)) + size - int64(len(pdfHeader)) + int64(len(tail))
	req.Header.Set("Content-Type", "multipart/form-data; boundary="+boundary)
	if f.key != "" {
		req.Header.Set("Authorization", "Bearer "+f.key)
	}
	for _, h := range f.headers {
		req.Header.Set(h[0], h[1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(answer)))
	}
	var got struct {
		SizeBytes *int64 `json:"size_bytes"`
		Size      *int64 `json:"size"`
		Bytes     *int64 `json:"bytes"` // an OpenAI file object
		BodyBytes *int64 `json:"body_bytes"`
	}
	if err := json.Unmarshal(answer, &got); err != nil {
		return fmt.Errorf("answer is not JSON: %q", answer)
	}
	if got.BodyBytes != nil {
		// The null sink counts the whole body, not the file.
		if *got.BodyBytes != req.ContentLength {
			return fmt.Errorf("body bytes received do not match %d: %s", req.ContentLength, strings.TrimSpace(string(answer)))
		}
		return nil
	}
	stored := cmp.Or(got.SizeBytes, got.Size, got.Bytes)
	if stored == nil || *stored != size {
		return fmt.Errorf("stored size does not match %d: %s", size, strings.TrimSpace(string(answer)))
	}
	return nil
}

// pattern reads left bytes of block repeated. The block is shared by every
// upload and only read.
type pattern struct {
	block []byte
	off   int
	left  int64
}

func (p *pattern) Read(b []byte) (int, error) {
	if p.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(b)) > p.left {
		b = b[:p.left]
	}
	n := 0
	for n < len(b) {
		c := copy(b[n:], p.block[p.off:])
		n += c
		p.off = (p.off + c) % len(p.block)
	}
	p.left -= int64(n)
	return n, nil
}

// WriteTo hands the writer large slices of the block directly, sparing a
// copy when the HTTP client can use it.
func (p *pattern) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for p.left > 0 {
		chunk := p.block[p.off:]
		if int64(len(chunk)) > p.left {
			chunk = chunk[:p.left]
		}
		n, err := w.Write(chunk)
		total += int64(n)
		p.left -= int64(n)
		p.off = (p.off + n) % len(p.block)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// s3Client returns a path-style client of endpoint, credentials from the
// SDK's standard chain.
func s3Client(ctx context.Context, endpoint, region string) (*s3.Client, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(region))
	if err != nil {
		return nil, err
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.UsePathStyle = true
	}), nil
}

// s3put is the S3 path without the gateway: the same file sent straight
// to the server the way the gateway's S3 backend sends it — a multipart
// upload of 5 MiB parts with CRC32 checksums, up to two parts in flight
// (-inflight, the backend's partsInFlight) from reused buffers — so
// gateway / s3put is the gateway's own share of the S3 path's cost.
func s3put(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("s3put", flag.ContinueOnError)
	endpoint := fs.String("endpoint", "", "S3-compatible endpoint URL")
	bucketName := fs.String("bucket", "", "bucket")
	key := fs.String("key", "direct/bench.pdf", "object key")
	region := fs.String("region", "us-east-1", "region")
	size := fs.Int64("size", 100<<20, "bytes of the file, header included")
	partSize := fs.Int("part", 5<<20, "part size")
	inflight := fs.Int("inflight", 2, "parts sent at once")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *endpoint == "" || *bucketName == "" || *size < int64(len(pdfHeader)) || *partSize < 5<<20 || *inflight < 1 {
		return errors.New("s3put: -endpoint and -bucket are required, -size >= 9, -part >= 5MiB, -inflight >= 1")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	client, err := s3Client(ctx, *endpoint, *region)
	if err != nil {
		return err
	}
	block, err := newBlock()
	if err != nil {
		return err
	}
	body := fileBytes(block, 0, *size)
	bufs := newBuffers(*inflight, *partSize)

	// The gateway keeps its connections to the server open; so does this
	// one, from before the clock starts.
	if _, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: bucketName}); err != nil {
		return fmt.Errorf("s3put: %w", err)
	}
	t0 := time.Now()
	if err := putMultipart(ctx, client, *bucketName, *key, "application/pdf", body, bufs); err != nil {
		return fmt.Errorf("s3put: %w", err)
	}
	wall := time.Since(t0)
	mb := float64(*size) / 1e6 / wall.Seconds()
	fmt.Fprintf(stdout, "uploads=1 bytes=%d seconds=%.3f mbps=%.1f min_mbps=%.1f max_mbps=%.1f\n", *size, wall.Seconds(), mb, mb, mb)
	return nil
}

// newBuffers returns a full channel of n part buffers of size bytes.
func newBuffers(n, size int) chan []byte {
	bufs := make(chan []byte, n)
	for range n {
		bufs <- make([]byte, size)
	}
	return bufs
}

// putMultipart stores body as key with one multipart upload, as the
// gateway's S3 backend stores a body longer than a part: parts of the
// buffers' size with CRC32 checksums, as many in flight as bufs holds
// (every buffer of bufs is back in it when putMultipart returns).
func putMultipart(ctx context.Context, client *s3.Client, bucketName, key, contentType string, body io.Reader, bufs chan []byte) error {
	out, err := client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket: &bucketName, Key: &key, ContentType: &contentType,
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
	})
	if err != nil {
		return fmt.Errorf("create %s: %w", key, err)
	}
	g, gctx := errgroup.WithContext(ctx)
	var mu sync.Mutex
	var parts []types.CompletedPart
	var rerr error
	for num := int32(1); ; num++ {
		var buf []byte
		select {
		case buf = <-bufs:
		case <-gctx.Done():
		}
		if buf == nil {
			break
		}
		var n int
		n, rerr = io.ReadFull(body, buf)
		if n > 0 {
			g.Go(func() error {
				defer func() { bufs <- buf }()
				p, err := client.UploadPart(gctx, &s3.UploadPartInput{
					Bucket: &bucketName, Key: &key, UploadId: out.UploadId, PartNumber: aws.Int32(num),
					Body: bytes.NewReader(buf[:n]), ContentLength: aws.Int64(int64(n)),
					ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
				})
				if err != nil {
					return fmt.Errorf("%s part %d: %w", key, num, err)
				}
				mu.Lock()
				parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(num), ETag: p.ETag, ChecksumCRC32: p.ChecksumCRC32})
				mu.Unlock()
				return nil
			})
		} else {
			bufs <- buf
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			rerr = nil
			break
		}
		if rerr != nil {
			break
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if rerr != nil {
		return rerr
	}
	slices.SortFunc(parts, func(a, b types.CompletedPart) int { return cmp.Compare(*a.PartNumber, *b.PartNumber) })
	if _, err := client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &bucketName, Key: &key, UploadId: out.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	}); err != nil {
		return fmt.Errorf("complete %s: %w", key, err)
	}
	return nil
}

// fileBytes reads the bytes [off, off+n) of the file every command sends:
// the PDF header, then the block repeated.
func fileBytes(block []byte, off, n int64) io.Reader {
	h := int64(len(pdfHeader))
	if off >= h {
		return &pattern{block: block, off: int((off - h) % int64(len(block))), left: n}
	}
	head := pdfHeader[off:min(h, off+n)]
	return io.MultiReader(strings.NewReader(head), &pattern{block: block, left: n - int64(len(head))})
}

func bucket(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bucket", flag.ContinueOnError)
	endpoint := fs.String("endpoint", "", "S3-compatible endpoint URL")
	name := fs.String("bucket", "", "bucket to create")
	region := fs.String("region", "us-east-1", "region")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *endpoint == "" || *name == "" {
		return errors.New("bucket: -endpoint and -bucket are required")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	client, err := s3Client(ctx, *endpoint, *region)
	if err != nil {
		return err
	}
	_, err = client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(*name)})
	var owned *types.BucketAlreadyOwnedByYou
	if errors.As(err, &owned) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", *name, err)
	}
	return nil
}
