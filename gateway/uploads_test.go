package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/files"
)

// fakeUploads records what the routes ask of the upload service; AddPart
// reads the part and then the rest of the form, as the service does.
type fakeUploads struct {
	created  *files.CreateUpload
	partData []byte
	restErr  error
	kept     bool
	complete *files.CompleteUpload
}

func (f *fakeUploads) MaxPartBytes() int64 { return 1 << 10 }

func (f *fakeUploads) Create(_ context.Context, c files.CreateUpload) (files.UploadRecord, error) {
	f.created = &c
	return files.UploadRecord{ID: "upload_x", Bytes: c.Bytes, Filename: c.Filename, Purpose: c.Purpose,
		Status: files.UploadPending, CreatedAt: time.Unix(100, 0), ExpiresAt: time.Unix(3700, 0)}, nil
}

func (f *fakeUploads) Get(context.Context, files.UploadRef) (files.UploadState, error) {
	return files.UploadState{}, files.ErrUploadNotFound
}

func (f *fakeUploads) AddPart(_ context.Context, ref files.UploadRef, body io.Reader, _ int64, rest func() error) (files.UploadPart, error) {
	b, err := io.ReadAll(body)
	if err != nil {
		return files.UploadPart{}, err
	}
	f.partData = b
	if f.restErr = rest(); f.restErr != nil {
		return files.UploadPart{}, f.restErr
	}
	f.kept = true
	return files.UploadPart{ID: "part_1", UploadID: ref.ID, Bytes: int64(len(b)), CreatedAt: time.Unix(200, 0)}, nil
}

func (f *fakeUploads) Complete(_ context.Context, c files.CompleteUpload) (files.UploadState, error) {
	f.complete = &c
	return files.UploadState{Upload: files.UploadRecord{ID: c.Ref.ID, Status: files.UploadCompleted}}, nil
}

func (f *fakeUploads) Cancel(context.Context, files.UploadRef) (files.UploadRecord, error) {
	return files.UploadRecord{}, &files.UploadStateError{Status: files.UploadCompleted}
}

func postJSON(t *testing.T, h http.Handler, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("POST", path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer standard")
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestCreateUploadReadsTheBody(t *testing.T) {
	up := &fakeUploads{}
	h := mustNew(t, Options{Uploads: up}).Handler()
	rec := postJSON(t, h, apiPrefix+"/uploads?workspace_id=w", `{"bytes":2147483648,"filename":"big.csv","mime_type":"text/csv","purpose":"batch"}`)
	if rec.Code != http.StatusOK {
		t.Fatalf("create = %d %s", rec.Code, rec.Body)
	}
	if c := up.created; c == nil || c.Bytes != 2<<30 || c.Filename != "big.csv" || c.MimeType != "text/csv" || c.Purpose != files.PurposeBatch || c.WorkspaceID != "w" {
		t.Errorf("service asked %+v", up.created)
	}
	want := `{"id":"upload_x","object":"upload","bytes":2147483648,"created_at":100,"expires_at":3700,"filename":"big.csv","purpose":"batch","status":"pending","file":null}`
	if got := strings.TrimSpace(rec.Body.String()); got != want {
		t.Errorf("answer\n%s\nwant\n%s", got, want)
	}

	for body, field := range map[string]string{
		`{"bytes":"10","filename":"a","mime_type":"text/plain","purpose":"batch"}`:     "bytes",
		`{"bytes":1.5,"filename":"a","mime_type":"text/plain","purpose":"batch"}`:      "bytes",
		`{"bytes":10,"filename":7,"mime_type":"text/plain","purpose":"batch"}`:         "filename",
		`{"bytes":10,"filename":"a","mime_type":"text/plain","purpose":""}`:            "purpose",
		`{"bytes":10,"filename":"a","mime_type":"text/plain"}`:                         "purpose",
		`{"bytes":10,"filename":"a","mime_type":"text/plain","purpose":"batch","x":1}`: "x",
		`[1]`: "body",
	} {
		rec := postJSON(t, h, apiPrefix+"/uploads", body)
		env := decodeEnvelope(t, rec)
		fields, _ := env.Error.Metadata["fields"].(map[string]any)
		if rec.Code != http.StatusBadRequest || fields[field] == nil {
			t.Errorf("%s = %d %s, want 400 naming %s", body, rec.Code, rec.Body, field)
		}
	}
	if rec := postJSON(t, h, apiPrefix+"/uploads?provider=openai", `{}`); rec.Code != http.StatusBadRequest {
		t.Errorf("provider = %d, want 400", rec.Code)
	}
}

// partForm builds a multipart body of the named fields, in order.
func partFormBody(t *testing.T, fields ...[2]string) (*bytes.Buffer, string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for _, f := range fields {
		w, err := mw.CreateFormFile(f[0], "blob")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(f[1]))
	}
	_ = mw.Close()
	return &b, mw.FormDataContentType()
}

func sendPartForm(h http.Handler, body io.Reader, contentType string, length int64) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", apiPrefix+"/uploads/upload_x/parts", body)
	req.Header.Set("Authorization", "Bearer standard")
	req.Header.Set("Content-Type", contentType)
	if length >= 0 {
		req.ContentLength = length
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestAddUploadPartReadsTheWholeFormFirst(t *testing.T) {
	up := &fakeUploads{}
	h := mustNew(t, Options{Uploads: up}).Handler()
	body, ct := partFormBody(t, [2]string{"note", "ignored"}, [2]string{"data", "hello"}, [2]string{"other", "x"})
	rec := sendPartForm(h, body, ct, -1)
	if rec.Code != http.StatusOK || string(up.partData) != "hello" || !up.kept {
		t.Fatalf("part = %d %s; service read %q", rec.Code, rec.Body, up.partData)
	}
	if got := strings.TrimSpace(rec.Body.String()); got != `{"id":"part_1","object":"upload.part","created_at":200,"upload_id":"upload_x"}` {
		t.Errorf("answer %s", got)
	}

	// A second data part fails the rest of the form: the part is not kept.
	up = &fakeUploads{}
	h = mustNew(t, Options{Uploads: up}).Handler()
	body, ct = partFormBody(t, [2]string{"data", "one"}, [2]string{"data", "two"})
	rec = sendPartForm(h, body, ct, -1)
	if rec.Code != http.StatusBadRequest || up.kept || up.restErr == nil {
		t.Errorf("two data parts = %d %s, kept %v; want 400 and nothing kept", rec.Code, rec.Body, up.kept)
	}

	// No data part, and a body that is not a form.
	body, ct = partFormBody(t, [2]string{"note", "x"})
	if rec := sendPartForm(h, body, ct, -1); rec.Code != http.StatusBadRequest {
		t.Errorf("no data part = %d", rec.Code)
	}
	if rec := sendPartForm(h, strings.NewReader("{}"), "application/json", -1); rec.Code != http.StatusBadRequest {
		t.Errorf("a JSON body = %d", rec.Code)
	}

	// Declared over the part limit: 413 before a byte is read.
	read := &countingBody{r: strings.NewReader(strings.Repeat("x", 4<<10))}
	rec = sendPartForm(h, read, ct, 1<<10+multipartSlack+1)
	env := decodeEnvelope(t, rec)
	if rec.Code != http.StatusRequestEntityTooLarge || env.Error.Metadata["max_part_bytes"] != float64(1<<10) || read.n != 0 {
		t.Errorf("declared too large = %d %s after reading %d bytes; want 413 naming max_part_bytes, nothing read", rec.Code, rec.Body, read.n)
	}
}

type countingBody struct {
	r io.Reader
	n int
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestCompleteUploadReadsPartIDs(t *testing.T) {
	up := &fakeUploads{}
	h := mustNew(t, Options{Uploads: up}).Handler()
	rec := postJSON(t, h, apiPrefix+"/uploads/upload_x/complete", `{"part_ids":["part_b","part_a"],"md5":"00112233445566778899aabbccddeeff"}`)
	if rec.Code != http.StatusOK || up.complete == nil || strings.Join(up.complete.PartIDs, ",") != "part_b,part_a" ||
		up.complete.MD5 != "00112233445566778899aabbccddeeff" || up.complete.Ref.ID != "upload_x" {
		t.Fatalf("complete = %d %s; service asked %+v", rec.Code, rec.Body, up.complete)
	}
	for _, body := range []string{`{}`, `{"part_ids":"part_a"}`, `{"part_ids":[1]}`, `{"part_ids":[],"extra":1}`, `{"md5":5,"part_ids":[]}`} {
		if rec := postJSON(t, h, apiPrefix+"/uploads/upload_x/complete", body); rec.Code != http.StatusBadRequest {
			t.Errorf("%s = %d %s, want 400", body, rec.Code, rec.Body)
		}
	}
}

func TestUploadErrorsInTheEnvelope(t *testing.T) {
	up := &fakeUploads{}
	h := mustNew(t, Options{Uploads: up}).Handler()
	rec := do(t, h, "GET", apiPrefix+"/uploads/upload_nope", "standard", nil)
	if env := decodeEnvelope(t, rec); rec.Code != http.StatusNotFound || env.Error.Message != msgNotFound {
		t.Errorf("unknown upload = %d %s", rec.Code, rec.Body)
	}
	rec = postJSON(t, h, apiPrefix+"/uploads/upload_x/cancel", ``)
	env := decodeEnvelope(t, rec)
	fields, _ := env.Error.Metadata["fields"].(map[string]any)
	if rec.Code != http.StatusBadRequest || !strings.Contains(fields["status"].(string), "completed") {
		t.Errorf("cancelling a completed upload = %d %s, want 400 naming the status", rec.Code, rec.Body)
	}
	status, _ := classify(&files.TooManyPendingError{Limit: 3})
	meta := errorMetadata(&files.TooManyPendingError{Limit: 3})
	if status != http.StatusTooManyRequests || meta["max_pending"] != 3 {
		t.Errorf("too many pending = %d %v, want 429 naming the limit", status, meta)
	}
	if status, _ := classify(errors.Join(files.ErrPartsExceedUpload)); status != http.StatusBadRequest {
		t.Errorf("parts past the upload = %d, want 400", status)
	}
}
