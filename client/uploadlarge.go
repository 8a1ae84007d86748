package client

import (
	"bytes"
	"cmp"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// Limits of the gateway's resumable uploads (its defaults).
const (
	// MaxPartSize is the largest part the gateway takes, and the part size
	// of UploadLarge unless told otherwise.
	MaxPartSize = 64 << 20
	// MaxUploadParts is the most parts an upload may hold.
	MaxUploadParts = 10_000
	// DefaultPartConcurrency is how many parts UploadLarge sends at once
	// unless told otherwise.
	DefaultPartConcurrency = 4
)

// UploadStatus is the state of an upload in parts.
type UploadStatus string

// The states of an upload.
const (
	UploadPending   UploadStatus = "pending"
	UploadCompleted UploadStatus = "completed"
	UploadCancelled UploadStatus = "cancelled"
	UploadExpired   UploadStatus = "expired"
)

// UploadObject is an upload in parts (OpenAI's Upload object): a file
// being sent in parts, made a File at completion.
type UploadObject struct {
	ID        string
	Bytes     int64
	CreatedAt time.Time
	ExpiresAt time.Time
	Filename  string
	Purpose   string
	Status    UploadStatus
	// File is the file made at completion; nil before.
	File *File
	// Parts are the parts stored so far, in the order they were stored;
	// only GetUpload fills them.
	Parts []UploadPart
}

// UploadPart is one stored part of an upload.
type UploadPart struct {
	ID        string
	Bytes     int64
	CreatedAt time.Time
}

// uploadWire is the Upload object as the gateway sends it.
type uploadWire struct {
	ID        string       `json:"id"`
	Bytes     int64        `json:"bytes"`
	CreatedAt int64        `json:"created_at"`
	ExpiresAt int64        `json:"expires_at"`
	Filename  string       `json:"filename"`
	Purpose   string       `json:"purpose"`
	Status    UploadStatus `json:"status"`
	File      *File        `json:"file"`
	Parts     []struct {
		ID        string `json:"id"`
		Bytes     int64  `json:"bytes"`
		CreatedAt int64  `json:"created_at"`
	} `json:"parts"`
}

func (w *uploadWire) object() *UploadObject {
	u := &UploadObject{
		ID: w.ID, Bytes: w.Bytes, CreatedAt: time.Unix(w.CreatedAt, 0).UTC(), ExpiresAt: time.Unix(w.ExpiresAt, 0).UTC(),
		Filename: w.Filename, Purpose: w.Purpose, Status: w.Status, File: w.File,
	}
	for _, p := range w.Parts {
		u.Parts = append(u.Parts, UploadPart{ID: p.ID, Bytes: p.Bytes, CreatedAt: time.Unix(p.CreatedAt, 0).UTC()})
	}
	return u
}

func uploadPath(id string) string { return "/uploads/" + url.PathEscape(id) }

// GetUpload returns an upload and the parts it holds.
func (c *Client) GetUpload(ctx context.Context, id string, opts ...FileOption) (*UploadObject, error) {
	w, err := get[uploadWire](ctx, c, uploadPath(id), fileQuery(opts))
	if err != nil {
		return nil, err
	}
	return w.object(), nil
}

// CancelUpload cancels a pending upload: its parts are removed and the
// bytes it reserved of the workspace's quota are given back. Cancelling a
// completed upload is a 400 *Error.
func (c *Client) CancelUpload(ctx context.Context, id string, opts ...FileOption) (*UploadObject, error) {
	return c.postUpload(ctx, uploadPath(id)+"/cancel", fileQuery(opts), nil, struct{}{}, true)
}

// postUpload POSTs v as JSON to path and decodes the Upload answered.
func (c *Client) postUpload(ctx context.Context, path string, q url.Values, h http.Header, v any, retry bool) (*UploadObject, error) {
	body, err := jsonBody(v)
	if err != nil {
		return nil, err
	}
	hdr := http.Header{"Content-Type": {"application/json"}}
	for k, vs := range h {
		hdr[k] = vs
	}
	r := request{method: http.MethodPost, path: path, query: q, header: hdr, body: body, idempotent: retry}
	resp, err := c.send(ctx, r)
	if err != nil {
		return nil, err
	}
	var w uploadWire
	if err := decode(r, resp, &w); err != nil {
		return nil, err
	}
	return w.object(), nil
}

// LargeUpload says how UploadLarge and ResumeUpload send a file.
type LargeUpload struct {
	// Filename is the name the file is stored under.
	Filename string
	// Purpose is as for Upload; "" is user_data.
	Purpose string
	// MimeType is the declared type; the gateway refuses the file at
	// completion if its bytes say otherwise. "" declares none in
	// particular (application/octet-stream).
	MimeType string
	// PartSize is the size of every part but the last; 0 is MaxPartSize.
	// Resuming uses the part size of the progress instead.
	PartSize int64
	// Concurrency is how many parts are sent at once; 0 is
	// DefaultPartConcurrency. With a plain io.Reader each part in flight
	// is held in a buffer of PartSize bytes: memory is PartSize ×
	// Concurrency (256 MiB by default), allocated once and reused.
	Concurrency int
	// MD5 sends the md5 of the whole file at completion, so the gateway
	// checks the file it assembled against the bytes read here. It is off
	// by default because the gateway then reads the whole assembled file
	// back from storage before it answers (8 GiB at most: minutes, and
	// egress on a cloud bucket), while each part already travels under
	// TCP's and TLS's checks and is stored by exact size. Turn it on
	// where a silent storage fault must not go unnoticed.
	MD5 bool
	// OnProgress, when set, is called after each part is stored with the
	// progress so far, one call at a time. A caller that must survive its
	// own restart stores it (it encodes as JSON) and passes it to
	// ResumeUpload. It must return quickly: parts wait for it.
	OnProgress func(UploadProgress)
}

// UploadProgress is what a client must keep to resume an upload: the
// upload, how the file was cut, and which stored part holds which range.
//
// The gateway records parts by size and order of arrival only, and parts
// sent at once arrive in any order, so the ranges cannot be learnt from it:
// part i is always bytes [i×PartSize, min((i+1)×PartSize, Size)), and
// PartIDs[i] is the id the gateway answered for it ("" while not stored).
type UploadProgress struct {
	UploadID string   `json:"upload_id"`
	Size     int64    `json:"size"`
	PartSize int64    `json:"part_size"`
	PartIDs  []string `json:"part_ids"`
}

// partLen is the size of part i.
func (p *UploadProgress) partLen(i int) int64 {
	return min(p.PartSize, p.Size-int64(i)*p.PartSize)
}

// IncompleteUploadError is returned when parts could not be stored after
// every retry (the gateway or the network stayed down): the upload is left
// pending, holding what was stored, until it expires. Resume it with
// ResumeUpload(Progress), which reads the same bytes from an io.ReaderAt;
// a caller that sent a stream it cannot read again gives the reservation
// back with CancelUpload(Progress.UploadID).
type IncompleteUploadError struct {
	Progress UploadProgress
	Err      error
}

func (e *IncompleteUploadError) Error() string {
	return fmt.Sprintf("client: upload %s incomplete: %v", e.Progress.UploadID, e.Err)
}

func (e *IncompleteUploadError) Unwrap() error { return e.Err }

// UploadStateError is a resumption of an upload that is no longer pending
// (cancelled or expired).
type UploadStateError struct{ Status UploadStatus }

func (e *UploadStateError) Error() string { return "client: the upload is " + string(e.Status) }

// ErrUnknownParts: the upload holds parts this client did not record (a
// part stored as its answer was lost, or before a crash), and which range
// each holds cannot be told apart. They count against the upload's bytes,
// so it cannot be completed: it is cancelled, and the file must be sent
// again as a new upload.
var ErrUnknownParts = errors.New("client: the upload holds parts of unknown range")

// UploadLarge sends a file of size bytes read from r as an upload in parts
// (up to 8 GiB), several parts at once, and returns the File made. The
// workspace is the key's own unless opts say otherwise.
//
// When r is an io.ReaderAt (an *os.File), parts are read from it directly,
// each as it is sent: its bytes 0 to size are sent whatever its read
// offset, and little memory is used. A plain io.Reader is read once, in
// order, into u.Concurrency buffers of u.PartSize bytes, reused.
//
// A part answered 408, 429, 5xx or cut off by the network is sent again,
// as the client's Retry allows (honouring Retry-After). Should those
// retries run out, an *IncompleteUploadError carries the progress to
// resume from. Any other failure (ctx ending, a refusal such as 400, 403
// or 413, r holding other than size bytes) cancels the upload, so nothing
// stays reserved, and is returned.
func (c *Client) UploadLarge(ctx context.Context, r io.Reader, size int64, u LargeUpload, opts ...FileOption) (*File, error) {
	if r == nil {
		return nil, errNoContent
	}
	partSize := u.PartSize
	if partSize == 0 {
		partSize = MaxPartSize
	}
	if size < 1 || partSize < 1 || partSize > MaxPartSize {
		return nil, fmt.Errorf("client: size %d and part size %d: need size ≥ 1 and a part size of 1 to %d", size, partSize, MaxPartSize)
	}
	n := (size + partSize - 1) / partSize
	if n > MaxUploadParts {
		return nil, fmt.Errorf("client: %d bytes in parts of %d make %d parts, more than %d", size, partSize, n, MaxUploadParts)
	}
	q := fileQuery(opts)
	create := map[string]any{
		"bytes": size, "filename": u.Filename,
		"mime_type": cmp.Or(u.MimeType, "application/octet-stream"), "purpose": cmp.Or(u.Purpose, "user_data"),
	}
	up, err := c.postUpload(ctx, "/uploads", q, http.Header{"Idempotency-Key": {idempotencyKey()}}, create, true)
	if err != nil {
		return nil, err
	}
	p := UploadProgress{UploadID: up.ID, Size: size, PartSize: partSize, PartIDs: make([]string, n)}
	return c.sendParts(ctx, &p, r, u, q, nil)
}

// ResumeUpload sends what p's upload lacks of the file in r and completes
// it. It asks the gateway which parts are stored (GET /uploads/{id}), keeps
// those of p whose sizes are the expected ones, and sends the others
// again; p must come from UploadLarge (its OnProgress or its
// *IncompleteUploadError) for the same bytes. Of u only Concurrency, MD5
// and OnProgress are used. A completed upload returns its File; a
// cancelled or expired one an *UploadStateError. Parts stored that p does
// not name make the upload impossible to complete: it is cancelled and
// ErrUnknownParts returned. Failures are handled as by UploadLarge.
func (c *Client) ResumeUpload(ctx context.Context, p UploadProgress, r io.ReaderAt, u LargeUpload, opts ...FileOption) (*File, error) {
	if r == nil {
		return nil, errNoContent
	}
	if p.Size < 1 || p.PartSize < 1 || int64(len(p.PartIDs)) != (p.Size+p.PartSize-1)/p.PartSize {
		return nil, fmt.Errorf("client: progress of upload %q does not describe %d bytes in parts of %d", p.UploadID, p.Size, p.PartSize)
	}
	q := fileQuery(opts)
	up, err := c.GetUpload(ctx, p.UploadID, opts...)
	if err != nil {
		return nil, err
	}
	switch up.Status {
	case UploadCompleted:
		if up.File == nil {
			return nil, &UploadStateError{Status: up.Status} // completed, and its file deleted since
		}
		return up.File, nil
	case UploadPending:
	default:
		return nil, &UploadStateError{Status: up.Status}
	}
	p.PartIDs = append([]string(nil), p.PartIDs...)
	stored := make(map[string]int64, len(up.Parts))
	for _, part := range up.Parts {
		stored[part.ID] = part.Bytes
	}
	for i, id := range p.PartIDs {
		if id == "" {
			continue
		}
		if b, ok := stored[id]; ok && b == p.partLen(i) {
			delete(stored, id)
		} else {
			p.PartIDs[i] = ""
		}
	}
	if len(stored) > 0 {
		return nil, c.abandon(ctx, p.UploadID, q, ErrUnknownParts)
	}
	return c.sendParts(ctx, &p, nil, u, q, r)
}

// partSender sends the missing parts of one upload.
type partSender struct {
	c        *Client
	q        url.Values
	p        *UploadProgress
	onUpdate func(UploadProgress)
	prefix   []byte // the form up to the data part's bytes
	suffix   []byte // the form after them

	mu sync.Mutex // guards p.PartIDs and the calls of onUpdate
	// gate is held shared by each part request and exclusively while
	// parts of unknown fate are reconciled with the gateway's list, so
	// that list holds no part whose answer is still on its way.
	gate   sync.RWMutex
	unsure atomic.Int32 // parts whose fate is being reconciled
}

// allocPartBuffer makes a part buffer for a plain reader; tests count it.
var allocPartBuffer = func(n int64) []byte { return make([]byte, n) }

// sendParts sends the parts of p not yet stored, from r (read in order)
// or from ra, then completes the upload.
func (c *Client) sendParts(ctx context.Context, p *UploadProgress, r io.Reader, u LargeUpload, q url.Values, ra io.ReaderAt) (*File, error) {
	if ra == nil {
		ra, _ = r.(io.ReaderAt)
	}
	conc := u.Concurrency
	if conc <= 0 {
		conc = DefaultPartConcurrency
	}
	s := &partSender{c: c, q: q, p: p, onUpdate: u.OnProgress}
	if err := s.frame(); err != nil {
		return nil, err
	}

	sctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	// The first failure stops new parts. Only a failure that dooms the
	// upload also cuts the parts in flight: after one that leaves it
	// pending, they run to their answers, so none is stored unrecorded.
	var (
		failMu sync.Mutex
		first  error // a fatal failure replaces one that is not
		halt   = make(chan struct{})
	)
	fail := func(err error) {
		failMu.Lock()
		defer failMu.Unlock()
		fatal := !retryable(ctx, err)
		switch {
		case first == nil:
			first = err
			close(halt)
		case fatal && retryable(ctx, first):
			first = err
		}
		if fatal {
			stop(err)
		}
	}
	var sum hash.Hash
	var sumDone chan error
	if u.MD5 {
		sum = md5.New()
		if ra != nil {
			// Parts are read out of order: the md5 is a pass of its own
			// over the same bytes, beside the sending.
			sumDone = make(chan error, 1)
			go func() {
				_, err := io.Copy(sum, &stopReader{ctx: sctx, halt: halt, r: io.NewSectionReader(ra, 0, p.Size)})
				sumDone <- err
			}()
		}
	}
	type job struct {
		i    int
		buf  []byte           // a plain reader's part, or nil
		body func() io.Reader // a fresh reader of the part's bytes
	}
	jobs := make(chan job)
	free := make(chan []byte, conc)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for j := range jobs {
				select {
				case <-halt:
				default:
					if err := s.sendPart(sctx, j.i, j.body); err != nil {
						fail(err)
					}
				}
				if j.buf != nil {
					free <- j.buf
				}
			}
		})
	}
	allocated := 0
	readErr := func() error {
		defer close(jobs)
		for i := range p.PartIDs {
			n := p.partLen(i)
			var j job
			if ra != nil {
				if p.PartIDs[i] != "" {
					continue
				}
				off := int64(i) * p.PartSize
				j = job{i: i, body: func() io.Reader { return &exactReader{r: io.NewSectionReader(ra, off, n), left: n} }}
			} else {
				var buf []byte
				select {
				case buf = <-free:
				default:
					if allocated < conc {
						allocated++
						buf = allocPartBuffer(min(p.PartSize, p.Size))
					} else {
						select {
						case buf = <-free:
						case <-halt:
							return nil
						}
					}
				}
				b := buf[:n]
				if m, err := io.ReadFull(r, b); err != nil {
					if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
						return fmt.Errorf("%w: %d bytes, size %d", ErrSizeMismatch, int64(i)*p.PartSize+int64(m), p.Size)
					}
					return err
				}
				if sum != nil {
					sum.Write(b)
				}
				j = job{i: i, buf: buf, body: func() io.Reader { return bytes.NewReader(b) }}
			}
			select {
			case jobs <- j:
			case <-halt:
				return nil
			}
		}
		if ra == nil {
			var probe [1]byte
			if m, _ := io.ReadFull(r, probe[:]); m > 0 {
				return fmt.Errorf("%w: more than size %d bytes", ErrSizeMismatch, p.Size)
			}
		}
		return nil
	}()
	if readErr != nil {
		fail(readErr)
	}
	wg.Wait()
	if sumDone != nil {
		if err := <-sumDone; err != nil && !errors.Is(err, errHalted) {
			fail(err)
		}
	}
	if first != nil {
		return nil, c.settle(ctx, s.snapshot(), q, first)
	}
	if err := ctx.Err(); err != nil {
		return nil, c.settle(ctx, s.snapshot(), q, err)
	}
	body := map[string]any{"part_ids": p.PartIDs}
	if sum != nil {
		body["md5"] = hex.EncodeToString(sum.Sum(nil))
	}
	done, err := c.postUpload(ctx, uploadPath(p.UploadID)+"/complete", q, nil, body, true)
	if err != nil {
		// The answer may have been lost after the gateway completed it.
		if up, gerr := c.GetUpload(ctx, p.UploadID, fileOptions(q)...); gerr == nil && up.Status == UploadCompleted && up.File != nil {
			return up.File, nil
		}
		return nil, c.settle(ctx, s.snapshot(), q, err)
	}
	if done.File == nil {
		return nil, fmt.Errorf("client: upload %s completed without a file", p.UploadID)
	}
	return done.File, nil
}

func fileOptions(q url.Values) []FileOption {
	return []FileOption{func(v url.Values) {
		for k, vs := range q {
			v[k] = vs
		}
	}}
}

// settle ends a failed upload: a failure that retrying later may cure
// leaves it pending for ResumeUpload; any other cancels it.
func (c *Client) settle(ctx context.Context, p UploadProgress, q url.Values, err error) error {
	if retryable(ctx, err) {
		return &IncompleteUploadError{Progress: p, Err: err}
	}
	return c.abandon(ctx, p.UploadID, q, err)
}

// abandon cancels the upload after err, even when ctx has ended, so its
// reservation is not held until it expires.
func (c *Client) abandon(ctx context.Context, id string, q url.Values, err error) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, cerr := c.CancelUpload(cctx, id, fileOptions(q)...); cerr != nil {
		return errors.Join(err, fmt.Errorf("client: cancel upload %s: %w", id, cerr))
	}
	return err
}

// retryable tells whether err may pass if the request is sent again: a
// 408, 429 or 5xx answer, or the connection failing while ctx lives.
func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, ErrSizeMismatch) || errors.Is(err, ErrUnknownParts) {
		return false
	}
	var apiErr *Error
	if errors.As(err, &apiErr) {
		s := apiErr.StatusCode
		return s == http.StatusRequestTimeout || s == http.StatusTooManyRequests || s >= 500
	}
	var uerr *url.Error
	return errors.As(err, &uerr)
}

// frame writes the multipart framing around the data part once.
func (s *partSender) frame() error {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	if _, err := mw.CreatePart(textproto.MIMEHeader{
		"Content-Disposition": {multipart.FileContentDisposition("data", "part")},
		"Content-Type":        {"application/octet-stream"},
	}); err != nil {
		return err
	}
	s.prefix = bytes.Clone(b.Bytes())
	b.Reset()
	if err := mw.Close(); err != nil {
		return err
	}
	s.suffix = bytes.Clone(b.Bytes())
	return nil
}

// snapshot copies the progress.
func (s *partSender) snapshot() UploadProgress {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := *s.p
	p.PartIDs = append([]string(nil), s.p.PartIDs...)
	return p
}

// stored records part i as id.
func (s *partSender) stored(i int, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.p.PartIDs[i] = id
	if s.onUpdate != nil {
		p := *s.p
		p.PartIDs = append([]string(nil), s.p.PartIDs...)
		s.onUpdate(p)
	}
}

// sendPart stores part i, retrying as the client's Retry allows.
func (s *partSender) sendPart(ctx context.Context, i int, body func() io.Reader) error {
	c := s.c
	n := s.p.partLen(i)
	h := http.Header{"Content-Type": {"multipart/form-data; boundary=" + boundaryOf(s.suffix)}}
	for attempt := 1; ; attempt++ {
		var data *exactReader
		r := request{
			method: http.MethodPost, path: uploadPath(s.p.UploadID) + "/parts", query: s.q, header: h,
			body: func() (io.Reader, int64, error) {
				rd := body()
				data, _ = rd.(*exactReader)
				return io.MultiReader(bytes.NewReader(s.prefix), rd, bytes.NewReader(s.suffix)), int64(len(s.prefix)) + n + int64(len(s.suffix)), nil
			},
		}
		// The gate is held until the answer is recorded, and a part whose
		// answer was lost is counted before it opens, so a reconciliation
		// sees every part either recorded or counted.
		s.gate.RLock()
		resp, err := c.once(ctx, r)
		var retryAfter time.Duration
		lost := false
		switch {
		case data != nil && data.err != nil:
			s.gate.RUnlock()
			return data.err // the file is shorter than its size
		case err == nil && resp.StatusCode < 400:
			var part struct {
				ID string `json:"id"`
			}
			if err = decode(r, resp, &part); err == nil && part.ID != "" {
				s.stored(i, part.ID)
				s.gate.RUnlock()
				return nil
			}
			if err == nil {
				err = fmt.Errorf("client: part %d answered without an id", i)
			}
			lost = ctx.Err() == nil // stored, but under an id not read
		case err == nil:
			apiErr := readError(resp)
			err, retryAfter = apiErr, apiErr.RetryAfter
		default:
			lost = retryable(ctx, err)
		}
		if lost {
			s.unsure.Add(1)
		}
		s.gate.RUnlock()
		if lost {
			// The part may have been stored before its answer was lost:
			// sending it again would store its range twice.
			id, rerr := s.reconcile(ctx, n)
			if rerr != nil {
				return rerr
			}
			if id != "" {
				s.stored(i, id)
				return nil
			}
		}
		if !lost && !retryable(ctx, err) || attempt >= c.retry.MaxAttempts {
			return err
		}
		wait, ok := c.backoff(retryAfter, attempt)
		if !ok {
			return err
		}
		if err := c.sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// reconcile learns whether a part of n bytes whose answer was lost was
// stored: once no other part is in flight, a part stored that this client
// has not recorded is that one, when it is the only one and of that size.
// It returns its id, or "" when nothing unknown is stored.
func (s *partSender) reconcile(ctx context.Context, n int64) (string, error) {
	s.gate.Lock()
	defer s.gate.Unlock()
	defer s.unsure.Add(-1) // before the gate opens
	up, err := s.c.GetUpload(ctx, s.p.UploadID, fileOptions(s.q)...)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	known := make(map[string]bool, len(s.p.PartIDs))
	for _, id := range s.p.PartIDs {
		known[id] = true
	}
	s.mu.Unlock()
	var unknown []UploadPart
	for _, part := range up.Parts {
		if !known[part.ID] {
			unknown = append(unknown, part)
		}
	}
	switch {
	case len(unknown) == 0:
		return "", nil
	case len(unknown) == 1 && unknown[0].Bytes == n && s.unsure.Load() == 1:
		return unknown[0].ID, nil
	}
	return "", ErrUnknownParts
}

// boundaryOf reads the boundary back from the closing delimiter
// "\r\n--B--\r\n".
func boundaryOf(suffix []byte) string {
	return string(suffix[4 : len(suffix)-4])
}

// exactReader reads a part from a ReaderAt, noting a file shorter than the
// size it was said to have.
type exactReader struct {
	r    io.Reader
	left int64
	err  error
}

func (e *exactReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if errors.Is(err, io.EOF) && e.left > 0 {
		e.err = fmt.Errorf("%w: the reader ended %d bytes early", ErrSizeMismatch, e.left)
		err = e.err
	}
	return n, err
}

// stopReader stops reading once ctx ends or halt closes.
type stopReader struct {
	ctx  context.Context
	halt <-chan struct{}
	r    io.Reader
}

// errHalted ends the md5 pass of an upload that stopped.
var errHalted = errors.New("client: upload stopped")

func (c *stopReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	select {
	case <-c.halt:
		return 0, errHalted
	default:
	}
	return c.r.Read(p)
}
