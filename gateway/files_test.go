package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/files/sniff"
)

// fakeFiles is a FileService whose one upload reads the file part to the
// end, the way the real service streams it to a destination.
type fakeFiles struct {
	max      int64
	params   []files.Params
	beginErr error
	up       *fakeUpload
}

func (f *fakeFiles) MaxFileBytes() int64 { return f.max }

func (f *fakeFiles) Begin(_ context.Context, p files.Params) (files.Upload, error) {
	f.params = append(f.params, p)
	if f.beginErr != nil {
		return nil, f.beginErr
	}
	return f.up, nil
}

type fakeUpload struct {
	filename  string
	body      []byte
	writeErr  error // returned after reading the whole part
	commitErr error
	// hideBodyErr replaces the body's error with one of its own, as a
	// storage SDK or provider client may.
	hideBodyErr bool
	// commitWaits makes Commit wait for the request to end, as a store
	// that is slow to answer would, and fail with its context's error.
	commitWaits bool
	writes      int
	commits     int
	aborts      int
	purpose     files.Purpose // as given to Commit
}

func (u *fakeUpload) Write(_ context.Context, filename string, body io.Reader) error {
	u.writes++
	u.filename = filename
	var err error
	u.body, err = io.ReadAll(body)
	switch {
	case err != nil && u.hideBodyErr:
		return errors.New("sdk: upload failed")
	case err != nil:
		return fmt.Errorf("reading the upload: %w", err)
	}
	return u.writeErr
}

func (u *fakeUpload) Commit(ctx context.Context, purpose files.Purpose) (files.Record, error) {
	u.commits++
	u.purpose = purpose
	if u.commitWaits {
		<-ctx.Done()
		return files.Record{}, fmt.Errorf("store: %w", ctx.Err())
	}
	if u.commitErr != nil {
		return files.Record{}, u.commitErr
	}
	return files.Record{
		ID: "file-abc", WorkspaceID: "w1", Filename: u.filename, MimeType: sniff.MimeText,
		Size: int64(len(u.body)), Purpose: purpose, CreatedAt: time.Date(2026, 3, 1, 12, 0, 0, 500, time.UTC),
	}, nil
}

func (u *fakeUpload) Abort(context.Context) { u.aborts++ }

const testMaxFile = 1 << 10

func newFilesAPI(t testing.TB) (http.Handler, *fakeFiles) {
	t.Helper()
	ff := &fakeFiles{max: testMaxFile, up: &fakeUpload{}}
	api, _ := newTestAPI(t, Options{Files: ff})
	return api.Handler(), ff
}

// part is one form part; header lines are written as given.
type part struct {
	headers []string
	body    string
}

func filePart(name, content string) part {
	return part{headers: []string{`Content-Disposition: form-data; name="file"; filename="` + name + `"`}, body: content}
}

func fieldPart(name, value string) part {
	return part{headers: []string{`Content-Disposition: form-data; name="` + name + `"`}, body: value}
}

const boundary = "b0undary"

// form writes parts as a multipart body by hand, so malformed ones can be
// written too.
func form(parts ...part) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString("--" + boundary + "\r\n")
		for _, h := range p.headers {
			b.WriteString(h + "\r\n")
		}
		b.WriteString("\r\n" + p.body + "\r\n")
	}
	b.WriteString("--" + boundary + "--\r\n")
	return b.String()
}

func uploadRequest(body io.Reader) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "/api/v1/files", body)
	req.Header.Set("Authorization", "Bearer standard")
	req.Header.Set("Content-Type", "multipart/form-data; boundary="+boundary)
	return req
}

func serve(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestUploadAnswerShapes(t *testing.T) {
	service := map[string]any{
		"_shape": "service", "id": "file-abc", "type": "file", "filename": "a.txt", "mime_type": "text/plain",
		"size_bytes": 5.0, "downloadable": false, "created_at": "2026-03-01T12:00:00.0000005Z",
	}
	anthropic := map[string]any{}
	for k, v := range service {
		anthropic[k] = v
	}
	anthropic["_shape"] = "anthropic"
	openai := map[string]any{
		"_shape": "openai", "id": "file-abc", "object": "file", "bytes": 5.0, "created_at": 1772366400.0,
		"filename": "a.txt", "purpose": "assistants", "status": "processed",
	}
	tests := []struct {
		name    string
		headers map[string]string
		want    map[string]any
	}{
		{"default", nil, service},
		{"anthropic-version", map[string]string{"anthropic-version": "2023-06-01"}, anthropic},
		{"Anthropic SDK", map[string]string{"anthropic-version": "2023-06-01", "User-Agent": "Anthropic/Python 0.40.0"}, anthropic},
		{"OpenAI SDK", map[string]string{"User-Agent": "OpenAI/Python 1.50.0"}, openai},
		// X-Stainless-* headers say nothing of the shape (negotiateShape).
		{"Stainless headers alone", map[string]string{"X-Stainless-Lang": "js"}, service},
		{"Anthropic SDK with Stainless headers", map[string]string{"anthropic-version": "2023-06-01", "X-Stainless-Lang": "python"}, anthropic},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, ff := newFilesAPI(t)
			req := uploadRequest(strings.NewReader(form(fieldPart("purpose", "assistants"), filePart("a.txt", "hello"))))
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			rec := serve(h, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			var got map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("answer\n got %v\nwant %v", got, tt.want)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if u := ff.up; u.writes != 1 || u.commits != 1 || u.aborts != 1 || string(u.body) != "hello" || u.filename != "a.txt" {
				t.Errorf("upload: %d writes, %d commits, %d aborts, body %q, filename %q", u.writes, u.commits, u.aborts, u.body, u.filename)
			}
		})
	}
}

func TestUploadPassesWhoAndWhere(t *testing.T) {
	h, ff := newFilesAPI(t)
	body := form(filePart("docs/a.txt", "hello"))
	req := uploadRequest(strings.NewReader(body))
	req.URL.RawQuery = "workspace_id=abc&provider=anthropic"
	if rec := serve(h, req); rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	p := ff.params[0]
	if p.Key != standardKey || p.WorkspaceID != "abc" || p.Provider != files.ProviderAnthropic || p.Declared != int64(len(body)) {
		t.Errorf("params %+v", p)
	}
	if ff.up.filename != "docs/a.txt" {
		t.Errorf("filename %q: the folders were dropped", ff.up.filename)
	}
}

// failingBody fails the test if the handler reads it.
type failingBody struct{ t *testing.T }

func (b failingBody) Read([]byte) (int, error) {
	b.t.Error("the body was read")
	return 0, io.EOF
}

func TestUploadRefusesADeclaredLengthOverTheLimitBeforeReading(t *testing.T) {
	h, ff := newFilesAPI(t)
	req := uploadRequest(failingBody{t})
	req.ContentLength = testMaxFile + multipartSlack + 1
	rec := serve(h, req)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	env := decodeEnvelope(t, rec)
	if env.Error.Message != msgTooLarge {
		t.Errorf("message %q", env.Error.Message)
	}
	// The same metadata as a file found too large while streaming.
	if env.Error.Metadata["max_file_bytes"] != float64(testMaxFile) {
		t.Errorf("metadata %v does not carry max_file_bytes %d", env.Error.Metadata, testMaxFile)
	}
	assertNamesField(t, rec, "file")
	if len(ff.params) != 0 {
		t.Error("Begin was called")
	}
}

// TestUploadPurpose: the purpose field is read wherever it sits in the
// form, validated, and given to Commit; the OpenAI shape echoes it.
func TestUploadPurpose(t *testing.T) {
	tests := []struct {
		name  string
		parts []part
		want  files.Purpose // given to Commit
		echo  string        // in the OpenAI answer
	}{
		{"before the file (Python SDKs)", []part{fieldPart("purpose", "batch"), filePart("a.txt", "x")}, files.PurposeBatch, "batch"},
		{"after the file (Node SDKs)", []part{filePart("a.txt", "x"), fieldPart("purpose", "fine-tune")}, files.PurposeFineTune, "fine-tune"},
		{"among other fields", []part{fieldPart("note", "n"), filePart("a.txt", "x"), fieldPart("purpose", "evals"), fieldPart("z", "z")}, files.PurposeEvals, "evals"},
		{"absent", []part{filePart("a.txt", "x")}, files.PurposeUserData, "user_data"},
		{"empty", []part{fieldPart("purpose", ""), filePart("a.txt", "x")}, files.PurposeUserData, "user_data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, ff := newFilesAPI(t)
			req := uploadRequest(strings.NewReader(form(tt.parts...)))
			req.Header.Set("User-Agent", "OpenAI/Python 1.109.1")
			rec := serve(h, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			if ff.up.purpose != tt.want {
				t.Errorf("Commit got purpose %q, want %q", ff.up.purpose, tt.want)
			}
			var got openAIFile
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if string(got.Purpose) != tt.echo {
				t.Errorf("answer purpose %q, want %q", got.Purpose, tt.echo)
			}
		})
	}
}

func TestUploadPurposeRefusals(t *testing.T) {
	tests := []struct {
		name  string
		parts []part
		wrote bool // the file part was streamed before the refusal
	}{
		{"unknown, before the file", []part{fieldPart("purpose", "training"), filePart("a.txt", "x")}, false},
		{"unknown, after the file", []part{filePart("a.txt", "x"), fieldPart("purpose", "Assistants")}, true},
		{"sent twice", []part{fieldPart("purpose", "batch"), fieldPart("purpose", "batch"), filePart("a.txt", "x")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, ff := newFilesAPI(t)
			rec := serve(h, uploadRequest(strings.NewReader(form(tt.parts...))))
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			assertNamesField(t, rec, "purpose")
			if ff.up.commits != 0 || ff.up.aborts != 1 || (ff.up.writes == 1) != tt.wrote {
				t.Errorf("%d writes, %d commits, %d aborts", ff.up.writes, ff.up.commits, ff.up.aborts)
			}
		})
	}
}

func TestUploadRefusals(t *testing.T) {
	many := make([]part, maxParts+1)
	for i := range many {
		many[i] = fieldPart(fmt.Sprint("f", i), "x")
	}
	tests := []struct {
		name        string
		contentType string // "" keeps the multipart one
		query       string
		body        string
		setup       func(*fakeFiles)
		status      int
		field       string // the metadata field named, if any
		begun       bool   // Begin was called, so Abort must be too
	}{
		{name: "unknown provider", query: "provider=mistral", body: form(filePart("a.txt", "x")), status: 400, field: "provider"},
		{name: "not multipart", contentType: "application/json", body: "{}", status: 400, field: "content_type"},
		{name: "no content type", contentType: "-", body: "x", status: 400, field: "content_type"},
		{name: "no boundary", contentType: "multipart/form-data", body: "x", status: 400, field: "content_type"},
		{name: "malformed content type", contentType: "multipart/form-data; boundary=", body: "x", status: 400, field: "content_type"},
		{name: "Begin refuses", body: form(filePart("a.txt", "x")), setup: func(f *fakeFiles) { f.beginErr = files.ErrWorkspaceForbidden }, status: 403},
		{name: "too many parts", body: form(append(many, filePart("a.txt", "x"))...), status: 400, field: "body", begun: true},
		{name: "part headers too long", body: form(part{headers: []string{
			`Content-Disposition: form-data; name="file"; filename="a.txt"`, "X-Padding: " + strings.Repeat("p", maxPartHeaderBytes),
		}, body: "x"}), status: 400, field: "body", begun: true},
		{name: "fields too large", body: form(fieldPart("a", strings.Repeat("x", maxFieldBytes/2)), fieldPart("b", strings.Repeat("x", maxFieldBytes/2+1)), filePart("a.txt", "x")),
			status: 400, field: "body", begun: true},
		{name: "no file part", body: form(fieldPart("purpose", "user_data")), status: 400, field: "file", begun: true},
		{name: "empty form", body: "--" + boundary + "--\r\n", status: 400, field: "file", begun: true},
		{name: "not a multipart body at all", body: "this is not a multipart body", status: 400, field: "file", begun: true},
		{name: "two file parts", body: form(filePart("a.txt", "x"), filePart("b.txt", "y")), status: 400, field: "file", begun: true},
		{name: "file part without a filename", body: form(fieldPart("file", "x")), status: 400, field: "filename", begun: true},
		{name: "filename with a control character", body: form(part{headers: []string{
			`Content-Disposition: form-data; name="file"; filename*=UTF-8''a%01b.txt`,
		}, body: "x"}), setup: func(f *fakeFiles) { f.up.writeErr = files.ValidateFilename("a\x01b.txt") }, status: 400, field: "filename", begun: true},
		{name: "the content is refused", body: form(filePart("a.txt", "x")), setup: func(f *fakeFiles) { f.up.writeErr = &sniff.TypeError{Reason: "nope", Offset: -1} },
			status: 400, field: "file", begun: true},
		{name: "the file is too large", body: form(filePart("a.txt", "x")), setup: func(f *fakeFiles) { f.up.writeErr = &files.TooLargeError{Limit: 1} },
			status: 413, field: "file", begun: true},
		{name: "the destination is unavailable", body: form(filePart("a.txt", "x")), setup: func(f *fakeFiles) { f.up.writeErr = files.ErrStorageUnavailable },
			status: 503, begun: true},
		{name: "the record is refused", body: form(filePart("a.txt", "x")), setup: func(f *fakeFiles) { f.up.commitErr = files.ErrQuotaExceeded },
			status: 403, begun: true},
		{name: "the reservation's lease was lost", body: form(filePart("a.txt", "x")), setup: func(f *fakeFiles) { f.up.writeErr = files.ErrReservationLost },
			status: 503, begun: true},
		{name: "a chunked file passes the quota", body: form(filePart("a.txt", "x")), setup: func(f *fakeFiles) {
			f.up.writeErr = fmt.Errorf("%w: past what is left", files.ErrQuotaExceeded)
		}, status: 403, begun: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, ff := newFilesAPI(t)
			if tt.setup != nil {
				tt.setup(ff)
			}
			req := uploadRequest(strings.NewReader(tt.body))
			switch tt.contentType {
			case "":
			case "-":
				req.Header.Del("Content-Type")
			default:
				req.Header.Set("Content-Type", tt.contentType)
			}
			req.URL.RawQuery = tt.query
			rec := serve(h, req)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			assertNamesField(t, rec, tt.field)
			if began := len(ff.params) > 0; began && tt.begun != (ff.beginErr == nil) {
				t.Errorf("Begin called: %v", began)
			}
			if tt.begun && ff.up.aborts != 1 {
				t.Errorf("%d aborts, want 1", ff.up.aborts)
			}
			if ff.up.commits > 0 && ff.up.commitErr == nil {
				t.Error("a refused upload was committed")
			}
		})
	}
}

// TestUploadMalformedBodies: whatever mime/multipart makes of broken bytes,
// the answer is a 400 naming the body, never a 500.
func TestUploadMalformedBodies(t *testing.T) {
	file := `Content-Disposition: form-data; name="file"; filename="a.txt"`
	tests := []struct {
		name string
		body string
	}{
		{"header line without a colon", form(part{headers: []string{file, "no colon here"}, body: "x"})},
		{"NUL in a header", form(part{headers: []string{file, "X-A: a\x00b"}, body: "x"})},
		{"DEL in a header", form(part{headers: []string{file, "X-A: a\x7fb"}, body: "x"})},
		{"control character in the filename", form(part{headers: []string{`Content-Disposition: form-data; name="file"; filename="a` + "\x01" + `b.txt"`}, body: "x"})},
		{"continuation line first", "--" + boundary + "\r\n folded: x\r\n\r\nx\r\n--" + boundary + "--\r\n"},
		{"junk after the closing boundary", "--" + boundary + "\r\n" + `Content-Disposition: form-data; name="a"` + "\r\n\r\nx\r\n--" + boundary + "--junk\r\n"},
		{"file part cut off", "--" + boundary + "\r\n" + file + "\r\n\r\nhello, and then nothing"},
		{"headers cut off", "--" + boundary + "\r\n" + file},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, ff := newFilesAPI(t)
			rec := serve(h, uploadRequest(strings.NewReader(tt.body)))
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", rec.Code, rec.Body)
			}
			env := decodeEnvelope(t, rec)
			fields, _ := env.Error.Metadata["fields"].(map[string]any)
			if len(fields) != 1 || (fields["body"] == nil && fields["filename"] == nil && fields["file"] == nil) {
				t.Errorf("metadata %v names no field of the body", env.Error.Metadata)
			}
			if strings.Contains(rec.Body.String(), "hello") || strings.Contains(rec.Body.String(), "junk") {
				t.Errorf("the answer echoes the body: %s", rec.Body)
			}
			if ff.up.commits != 0 || ff.up.aborts != 1 {
				t.Errorf("%d commits, %d aborts", ff.up.commits, ff.up.aborts)
			}
		})
	}
}

// stalledBody gives data, then fails as a client's connection does.
type stalledBody struct {
	data []byte
	err  error
}

func (s *stalledBody) Read(p []byte) (int, error) {
	if len(s.data) == 0 {
		return 0, s.err
	}
	n := copy(p, s.data)
	s.data = s.data[n:]
	return n, nil
}

func TestUploadBodyFailures(t *testing.T) {
	head := "--" + boundary + "\r\n" + `Content-Disposition: form-data; name="file"; filename="a.txt"` + "\r\n\r\n"
	tests := []struct {
		name   string
		body   io.Reader
		hide   bool
		status int
		field  string
	}{
		{"larger than the limit, length unknown", strings.NewReader(form(filePart("a.txt", strings.Repeat("x", testMaxFile+multipartSlack)))), false, 413, ""},
		{"larger than the limit, the error replaced on the way", strings.NewReader(form(filePart("a.txt", strings.Repeat("x", testMaxFile+multipartSlack)))), true, 413, ""},
		{"connection fails in the file", &stalledBody{data: []byte(head + "hello"), err: errors.New("read tcp: connection reset")}, false, 400, "body"},
		{"connection fails in the file, the error replaced", &stalledBody{data: []byte(head + "hello"), err: errors.New("read tcp: i/o timeout")}, true, 400, "body"},
		{"connection fails between parts", &stalledBody{data: []byte(form(fieldPart("a", "x"))[:20]), err: errors.New("read tcp: connection reset")}, false, 400, "body"},
		{"file cut off, the error replaced", strings.NewReader(head + "hello"), true, 400, "body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, ff := newFilesAPI(t)
			ff.up.hideBodyErr = tt.hide
			req := uploadRequest(tt.body)
			req.ContentLength = -1
			rec := serve(h, req)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			assertNamesField(t, rec, tt.field)
			if ff.up.commits != 0 {
				t.Error("committed")
			}
		})
	}
}

// assertNamesField checks the envelope's metadata names field under
// "fields" (or has no fields when field is "").
func assertNamesField(t *testing.T, rec *httptest.ResponseRecorder, field string) {
	t.Helper()
	env := decodeEnvelope(t, rec)
	fields, _ := env.Error.Metadata["fields"].(map[string]any)
	if field == "" {
		if fields != nil {
			t.Errorf("metadata %v names fields", env.Error.Metadata)
		}
		return
	}
	if _, ok := fields[field]; !ok {
		t.Errorf("metadata %v does not name %q", env.Error.Metadata, field)
	}
}

func TestPartFilename(t *testing.T) {
	tests := []struct {
		name        string
		disposition string // "" leaves the header out
		want        string
		wantErr     bool
	}{
		{"plain", `form-data; name="file"; filename="a.txt"`, "a.txt", false},
		{"folders are kept", `form-data; name="file"; filename="docs/2026/a.txt"`, "docs/2026/a.txt", false},
		{"traversal is returned as sent", `form-data; name="file"; filename="../../etc/passwd"`, "../../etc/passwd", false},
		{"unquoted", `form-data; name=file; filename=a.txt`, "a.txt", false},
		{"escaped quote", `form-data; name="file"; filename="say \"hi\".txt"`, `say "hi".txt`, false},
		{"browser-escaped quote stays escaped", `form-data; name="file"; filename="say %22hi%22.txt"`, "say %22hi%22.txt", false},
		{"raw UTF-8", "form-data; name=\"file\"; filename=\"r\u00e9sum\u00e9.pdf\"", "résumé.pdf", false},
		{"RFC 5987 filename* wins", `form-data; name="file"; filename="fallback.txt"; filename*=UTF-8''%E2%82%AC%20rates.txt`, "€ rates.txt", false},
		{"filename* may decode to a control character", `form-data; name="file"; filename*=UTF-8''a%00b.txt`, "a\x00b.txt", false},
		{"missing header", "", "", true},
		{"no filename", `form-data; name="file"`, "", true},
		{"empty filename", `form-data; name="file"; filename=""`, "", true},
		{"conflicting duplicates", `form-data; name="file"; filename="a"; filename="b"`, "", true},
		{"malformed", `form-data; filename="unterminated`, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := textproto.MIMEHeader{}
			if tt.disposition != "" {
				h.Set("Content-Disposition", tt.disposition)
			}
			got, err := partFilename(h)
			if tt.wantErr {
				var fe *files.FilenameError
				if !errors.As(err, &fe) || fe.Rule != files.RuleMissing || !errors.Is(err, files.ErrInvalidFilename) {
					t.Fatalf("partFilename = %q, %v; want a %s error", got, err, files.RuleMissing)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("partFilename = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestPartFilenameKeepsWhatFileNameDrops shows why the raw value is needed:
// multipart.Part.FileName() keeps only the last path element, so folders
// vanish and a traversal attempt turns into an innocent-looking name.
func TestPartFilenameKeepsWhatFileNameDrops(t *testing.T) {
	for _, sent := range []string{"docs/2026/a.txt", "../../etc/passwd", "a/"} {
		t.Run(sent, func(t *testing.T) {
			var body bytes.Buffer
			mw := multipart.NewWriter(&body)
			h := textproto.MIMEHeader{}
			h.Set("Content-Disposition", `form-data; name="file"; filename="`+sent+`"`)
			w, err := mw.CreatePart(h)
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(w, "hello")
			mw.Close()

			part, err := multipart.NewReader(&body, mw.Boundary()).NextPart()
			if err != nil {
				t.Fatal(err)
			}
			if base := part.FileName(); base == sent {
				t.Fatalf("Part.FileName() = %q kept the path; the premise of partFilename is gone", base)
			}
			raw, err := partFilename(part.Header)
			if err != nil || raw != sent {
				t.Fatalf("partFilename = %q, %v; want %q", raw, err, sent)
			}
			if verr := files.ValidateFilename(raw); (verr == nil) != (sent == "docs/2026/a.txt") {
				t.Fatalf("ValidateFilename(%q) = %v", raw, verr)
			}
		})
	}
}

func TestUploadOfADepartedClientAnswersNothing(t *testing.T) {
	h, ff := newFilesAPI(t)
	ctx, cancel := context.WithCancel(t.Context())
	ff.up.writeErr = context.Canceled
	req := uploadRequest(strings.NewReader(form(filePart("a.txt", "x")))).WithContext(ctx)
	cancel()
	rec := httptest.NewRecorder()
	func() {
		// The response is aborted, so net/http can write no status at all
		// (it would otherwise default to 200 for work not done).
		defer func() {
			if p := recover(); p != http.ErrAbortHandler {
				t.Fatalf("recovered %v, want http.ErrAbortHandler", p)
			}
		}()
		h.ServeHTTP(rec, req)
	}()
	if rec.Body.Len() != 0 {
		t.Fatalf("answered %q to a client that went away", rec.Body)
	}
	if ff.up.aborts != 1 || ff.up.commits != 0 {
		t.Errorf("%d aborts, %d commits", ff.up.aborts, ff.up.commits)
	}
}

// TestHalfClosedUploadIsNeverASuccess: a client that sends a complete upload
// and half-closes its connection is treated as gone; when that cancels the
// upload before it is stored, it must not read a success (net/http used to
// fill in "200 OK" with an empty body for the work not done).
func TestHalfClosedUploadIsNeverASuccess(t *testing.T) {
	h, ff := newFilesAPI(t)
	ff.up.commitWaits = true
	srv := httptest.NewServer(h)
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := form(filePart("a.txt", "hello"))
	fmt.Fprintf(conn, "POST /api/v1/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer standard\r\n"+
		"Content-Type: multipart/form-data; boundary=%s\r\nContent-Length: %d\r\n\r\n%s", boundary, len(body), body)
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("read: %v (got %q)", err, got)
	}
	if len(got) > 0 {
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(got)), nil)
		if err == nil && resp.StatusCode < 300 {
			t.Fatalf("a half-closed upload that was not stored was answered %s:\n%s", resp.Status, got)
		}
	}
	srv.Close() // waits for the handler, so its counts can be read
	if ff.up.aborts != 1 {
		t.Errorf("%d aborts, want 1", ff.up.aborts)
	}
}

// countingReader counts what is read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestPartHeadersAreBoundedAtTheReader: a part whose headers go on and on is
// refused after a bounded read, not after mime/multipart has buffered up to
// 10 MiB of them (8 concurrent uploads once cost 84 MB that way).
func TestPartHeadersAreBoundedAtTheReader(t *testing.T) {
	h, _ := newFilesAPI(t)
	for name, headers := range map[string][]string{
		"many short lines": append([]string{`Content-Disposition: form-data; name="file"; filename="a.txt"`},
			strings.Fields(strings.Repeat("X-Pad:"+strings.Repeat("a", 100)+" ", 9000))...),
		"one long line": {`Content-Disposition: form-data; name="file"; filename="a.txt"`, "X-Long: " + strings.Repeat("a", 900<<10)},
	} {
		t.Run(name, func(t *testing.T) {
			body := &countingReader{r: strings.NewReader(form(part{headers: headers, body: "hello"}))}
			req := uploadRequest(body)
			req.ContentLength = -1 // under the declared-size check: only the reader can stop it
			rec := serve(h, req)
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("status = %d %s, want 400", rec.Code, rec.Body)
			}
			if limit := int64(uploadReadBuffer + maxPartHeaderBytes + 4*multipartPeek); body.n > limit {
				t.Errorf("read %d bytes of the body before refusing, want at most %d", body.n, limit)
			}
		})
	}
}

// TestTrickledUploadIsCut: an upload that keeps sending, but too slowly on
// average, is answered 408 once the grace has passed — the per-read idle
// deadline alone would let it hold its slot and quota for ever.
func TestTrickledUploadIsCut(t *testing.T) {
	t.Parallel() // real sockets and real deadlines: waits that can overlap
	ff := &fakeFiles{max: 1 << 20, up: &fakeUpload{}}
	api, _ := newTestAPI(t, Options{Files: ff, BodyReadTimeout: 300 * time.Millisecond, MinUploadRate: 64 << 10})
	srv := httptest.NewServer(api.Handler())
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := form(filePart("a.txt", strings.Repeat("x", 200<<10)))
	fmt.Fprintf(conn, "POST /api/v1/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer standard\r\n"+
		"Content-Type: multipart/form-data; boundary=%s\r\nContent-Length: %d\r\n\r\n", boundary, len(body))
	stop := make(chan struct{})
	defer close(stop)
	go func() { // 100 bytes every 20 ms: 5 KB/s, each read well inside the idle deadline
		for i := 0; i < len(body); i += 100 {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if _, err := io.WriteString(conn, body[i:min(i+100, len(body))]); err != nil {
				return
			}
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a trickled upload: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("status = %d, want 408", resp.StatusCode)
	}
}
