package e2e

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The Python SDK cannot be installed where PyPI is out of reach, so its
// upload_file_chunked is replayed from the requests it sends, written down
// in testdata/sdk/requests/python-uploads.json with the SDK file and commit
// each field comes from.

// pythonUploads is the fixture.
type pythonUploads struct {
	SDK struct {
		Version string `json:"version"`
		Commit  string `json:"commit"`
	} `json:"sdk"`
	Runs []pythonUploadRun `json:"runs"`
}

// pythonUploadRun is one call of the helper: the file it was given and the
// requests it sent, in order.
type pythonUploadRun struct {
	Name string `json:"name"`
	File struct {
		Name    string `json:"name"`
		Purpose string `json:"purpose"`
		Content string `json:"content"`
	} `json:"file"`
	Requests []capturedRequest `json:"requests"`
}

// The fields the SDK's models declare required (openai/types/upload.py
// Upload, openai/types/uploads/upload_part.py UploadPart).
var (
	pythonUploadSchema = schema{"id": kString, "object": "=upload", "bytes": kInt, "created_at": kInt,
		"expires_at": kInt, "filename": kString, "purpose": kString, "status": kString}
	pythonPartSchema = schema{"id": kString, "object": "=upload.part", "created_at": kInt, "upload_id": kString}
)

func loadPythonUploads(t *testing.T) pythonUploads {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "sdk", "requests", "python-uploads.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f pythonUploads
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if f.SDK.Version == "" || len(f.SDK.Commit) != 40 || len(f.Runs) == 0 {
		t.Fatalf("fixture names no SDK version and commit, or holds no run: %+v", f.SDK)
	}
	return f
}

// TestPythonSDKUploadsFixture checks the fixture against itself, so that a
// hand edit cannot leave it saying something the SDK would not send: each
// part is a multipart body of one field "data" holding the next part_size
// bytes of the file, the declared lengths match the bodies, and the md5 the
// async run sends is the file's.
func TestPythonSDKUploadsFixture(t *testing.T) {
	for _, run := range loadPythonUploads(t).Runs {
		t.Run(run.Name, func(t *testing.T) {
			var joined []byte
			parts := 0
			for i, c := range run.Requests {
				if n, err := strconv.Atoi(c.Headers["Content-Length"]); err == nil && n != len(c.Body) {
					t.Errorf("request %d (%s): Content-Length %d, body %d bytes", i, c.Op, n, len(c.Body))
				}
				switch c.Op {
				case "create":
					var body map[string]any
					if err := json.Unmarshal([]byte(c.Body), &body); err != nil {
						t.Fatalf("create body: %v", err)
					}
					if body["bytes"] != float64(len(run.File.Content)) || body["filename"] != run.File.Name || body["purpose"] != run.File.Purpose {
						t.Errorf("create body %s does not declare the file %q (%d bytes, %s)", c.Body, run.File.Name, len(run.File.Content), run.File.Purpose)
					}
				case "part":
					parts++
					joined = append(joined, partData(t, c)...)
				case "complete":
					var body struct {
						PartIDs []string `json:"part_ids"`
						MD5     *string  `json:"md5"`
					}
					if err := json.Unmarshal([]byte(c.Body), &body); err != nil {
						t.Fatalf("complete body: %v", err)
					}
					if len(body.PartIDs) != parts {
						t.Errorf("complete lists %d parts, %d were sent", len(body.PartIDs), parts)
					}
					if sum := md5.Sum([]byte(run.File.Content)); body.MD5 != nil && *body.MD5 != hex.EncodeToString(sum[:]) {
						t.Errorf("complete's md5 %s is not the file's", *body.MD5)
					}
				}
			}
			if parts != 3 || string(joined) != run.File.Content {
				t.Errorf("%d parts carrying %q, want 3 carrying the file", parts, joined)
			}
		})
	}
}

// partData reads the one field of a part's multipart body as httpx2 writes
// it for bytes: named "data", filename "upload", application/octet-stream.
func partData(t *testing.T, c capturedRequest) []byte {
	t.Helper()
	mt, params, err := mime.ParseMediaType(c.Headers["Content-Type"])
	if err != nil || mt != "multipart/form-data" {
		t.Fatalf("part Content-Type %q: %v", c.Headers["Content-Type"], err)
	}
	mr := multipart.NewReader(strings.NewReader(c.Body), params["boundary"])
	p, err := mr.NextPart()
	if err != nil {
		t.Fatalf("part body: %v", err)
	}
	if p.FormName() != "data" || p.FileName() != "upload" || p.Header.Get("Content-Type") != "application/octet-stream" {
		t.Errorf("part field %q, filename %q, type %q", p.FormName(), p.FileName(), p.Header.Get("Content-Type"))
	}
	data, err := io.ReadAll(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mr.NextPart(); err != io.EOF {
		t.Errorf("part body holds more than the data field: %v", err)
	}
	return data
}

// TestPythonSDKUploadsReplayed sends a gateway on the README's SDK setup
// what openai-python's upload_file_chunked sends, sync and async: headers
// and bodies byte for byte, the key and the gateway's upload and part ids
// put in as its answers come. Every answer must satisfy the models the SDK
// parses it into, the completed upload must carry the file in OpenAI's
// shape (the SDK's User-Agent asks for it), and the file must read back as
// the bytes sent.
func TestPythonSDKUploadsReplayed(t *testing.T) {
	g := sdkConfig(t)
	key := g.newKey(t, "sdk-python")
	for _, run := range loadPythonUploads(t).Runs {
		t.Run(run.Name, func(t *testing.T) {
			content := run.File.Content
			var pairs []string // placeholder, the gateway's id
			var uploadID string
			parts := 0
			var done map[string]any
			for i, c := range run.Requests {
				swap := strings.NewReplacer(pairs...)
				path, body := swap.Replace(c.Path), swap.Replace(c.Body)
				if strings.Contains(path+body, "{upload_id}") || strings.Contains(path+body, "{part_id_") {
					t.Fatalf("request %d (%s): a placeholder is left: %s %s", i, c.Op, path, body)
				}
				req, err := http.NewRequest(c.Method, g.URL+path, strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range c.Headers {
					switch strings.ToLower(k) {
					case "host", "content-length", "connection":
						continue // the transport's own, from the URL and the body
					}
					req.Header.Set(k, strings.ReplaceAll(v, "{key}", key))
				}
				resp, err := g.client.Do(req)
				if err != nil {
					t.Fatalf("request %d (%s): %v", i, c.Op, err)
				}
				answer, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("request %d (%s %s %s) = %d %s", i, c.Op, c.Method, path, resp.StatusCode, answer)
				}
				var v map[string]any
				if err := json.Unmarshal(answer, &v); err != nil {
					t.Fatalf("request %d (%s): answer is not JSON: %s", i, c.Op, answer)
				}
				switch c.Op {
				case "create":
					wantUpload(t, v, run, "pending")
					if f, present := v["file"]; present && f != nil {
						t.Errorf("pending upload carries a file: %v", f)
					}
					uploadID, _ = v["id"].(string)
					if !strings.HasPrefix(uploadID, "upload_") {
						t.Fatalf("upload id %q", uploadID)
					}
					pairs = append(pairs, "{upload_id}", uploadID)
				case "part":
					for _, b := range checkSchema(v, pythonPartSchema) {
						t.Errorf("part answer breaks UploadPart: %s", b)
					}
					if v["upload_id"] != uploadID {
						t.Errorf("part answer's upload_id %v, want %s", v["upload_id"], uploadID)
					}
					parts++
					id, _ := v["id"].(string)
					pairs = append(pairs, fmt.Sprintf("{part_id_%d}", parts), id)
				case "complete":
					wantUpload(t, v, run, "completed")
					done = v
				}
			}
			file, _ := done["file"].(map[string]any)
			for _, b := range checkSchema(file, openAIFileSchema) {
				t.Errorf("completed upload's file breaks FileObject: %s", b)
			}
			if file["bytes"] != float64(len(content)) || file["filename"] != run.File.Name || file["purpose"] != run.File.Purpose {
				t.Errorf("completed upload's file = %v, want %d bytes of %q for %s", file, len(content), run.File.Name, run.File.Purpose)
			}
			id, _ := file["id"].(string)
			resp, got := g.do(t, http.MethodGet, "/api/v1/files/"+id+"/content", key, nil, nil)
			if resp.StatusCode != http.StatusOK || !bytes.Equal(got, []byte(content)) {
				t.Errorf("content of %s = %d %q, want the %d bytes sent", id, resp.StatusCode, got, len(content))
			}
		})
	}
}

// wantUpload checks an answer against the SDK's Upload model and the file
// the run declared.
func wantUpload(t *testing.T, v map[string]any, run pythonUploadRun, status string) {
	t.Helper()
	for _, b := range checkSchema(v, pythonUploadSchema) {
		t.Errorf("answer breaks Upload: %s", b)
	}
	if v["status"] != status || v["bytes"] != float64(len(run.File.Content)) || v["filename"] != run.File.Name || v["purpose"] != run.File.Purpose {
		t.Errorf("upload = %v, want %s, %d bytes of %q for %s", v, status, len(run.File.Content), run.File.Name, run.File.Purpose)
	}
}
