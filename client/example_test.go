package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"

	"github.com/aigateway/gateway/client"
)

// A component that is handed a file id (in a request it serves) resolves it
// to the file's bytes with a service key: service keys may read every file
// of their user's workspaces, downloadable or not, and write nothing.
func Example_serviceKeyReadsFile() {
	gw := startExampleGateway() // a gateway holding alice's notes.txt
	defer gw.close()

	// What the component is given: the gateway's address, its service key
	// (`gateway keys create --service`), and the file's workspace and id.
	c, err := client.New(gw.url, gw.serviceKey)
	if err != nil {
		log.Fatal(err)
	}
	ctx := client.WithRequestID(context.Background(), "job-1234") // follows the work through the logs
	in := client.InWorkspace(gw.workspaceID)

	f, err := c.GetFile(ctx, gw.fileID, in)
	if err != nil {
		log.Fatal(err)
	}
	content, err := c.FileContent(ctx, f.ID, nil, in)
	if err != nil {
		log.Fatal(err)
	}
	defer content.Close()
	fmt.Printf("%s, %s, %d bytes:\n", f.Filename, f.MimeType, f.SizeBytes)
	if _, err := io.Copy(os.Stdout, content); err != nil {
		log.Fatal(err)
	}
	// Output:
	// notes.txt, text/plain, 12 bytes:
	// hello, world
}

// exampleGateway stands in for a gateway holding one file of alice's
// workspace: it answers the two calls of the example as the gateway's API
// does (internal/e2e runs the same calls against a whole gateway).
type exampleGateway struct {
	url, serviceKey, workspaceID, fileID string
	close                                func()
}

func startExampleGateway() *exampleGateway {
	gw := &exampleGateway{
		serviceKey:  "sk-gw-0123456789abcdef.example-service-key",
		workspaceID: "0f8fad5b-d9cb-469f-a165-70867728950e",
		fileID:      "file-5d0e5c2b7a9f4e3c",
	}
	const content = "hello, world"
	mux := http.NewServeMux()
	allowed := func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Authorization") != "Bearer "+gw.serviceKey || r.URL.Query().Get("workspace_id") != gw.workspaceID ||
			r.PathValue("id") != gw.fileID {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":{"code":404,"message":"File not found","metadata":null}}`)
			return false
		}
		return true
	}
	mux.HandleFunc("GET /api/v1/files/{id}", func(w http.ResponseWriter, r *http.Request) {
		if allowed(w, r) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":%q,"filename":"notes.txt","mime_type":"text/plain","size_bytes":%d,"downloadable":false,`+
				`"created_at":"2026-11-27T12:00:00Z","workspace_id":%q,"_shape":"service"}`, gw.fileID, len(content), gw.workspaceID)
		}
	})
	mux.HandleFunc("GET /api/v1/files/{id}/content", func(w http.ResponseWriter, r *http.Request) {
		if allowed(w, r) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Content-Disposition", `attachment; filename="notes.txt"`)
			fmt.Fprint(w, content)
		}
	})
	srv := httptest.NewServer(mux)
	gw.url, gw.close = srv.URL, srv.Close
	return gw
}

// A component holding a file larger than one request takes (a dataset, a
// recording) sends it in parts. From an *os.File each part is read as it
// is sent, four at once; a part the gateway fails is sent again. Should
// the gateway stay unreachable, the error carries what to resume from.
func Example_uploadLarge() {
	gw := startExampleUploads()
	defer gw.close()
	f, err := os.CreateTemp("", "dataset-*.jsonl") // a file the component holds
	if err != nil {
		log.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.Write(bytes.Repeat([]byte(`{"prompt":"hi","completion":"hello"}`+"\n"), 10000)); err != nil {
		log.Fatal(err)
	}

	c, err := client.New(gw.url, "sk-gw-0123456789abcdef.example-key")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	st, err := f.Stat()
	if err != nil {
		log.Fatal(err)
	}
	lu := client.LargeUpload{
		Filename: "dataset.jsonl", MimeType: "application/jsonl",
		PartSize: 128 << 10, // small for the example; the default is 64 MiB
		MD5:      true,      // the gateway checks what it assembled
	}
	file, err := c.UploadLarge(ctx, f, st.Size(), lu)
	if inc := (*client.IncompleteUploadError)(nil); errors.As(err, &inc) {
		// The upload stays pending (an hour by default): send what it
		// lacks, now or after a restart that kept inc.Progress.
		file, err = c.ResumeUpload(ctx, inc.Progress, f, lu)
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s, %d bytes, from %d parts\n", file.Filename, file.SizeBytes, gw.parts())
	// Output:
	// dataset.jsonl, 370000 bytes, from 3 parts
}

// exampleUploads stands in for a gateway taking one upload in parts, as
// the gateway's API answers (internal/e2e runs against a whole gateway).
type exampleUploads struct {
	url   string
	close func()
	mu    sync.Mutex
	got   map[string][]byte
	size  int64
}

func (u *exampleUploads) parts() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.got)
}

func startExampleUploads() *exampleUploads {
	u := &exampleUploads{got: map[string][]byte{}}
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	upload := func(status string, file any) map[string]any {
		return map[string]any{"id": "upload_1", "object": "upload", "bytes": u.size, "created_at": 1764288000,
			"expires_at": 1764291600, "filename": "dataset.jsonl", "purpose": "user_data", "status": status, "file": file}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/uploads", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Bytes int64 }
		_ = json.NewDecoder(r.Body).Decode(&req)
		u.size = req.Bytes
		reply(w, upload("pending", nil))
	})
	mux.HandleFunc("POST /api/v1/uploads/upload_1/parts", func(w http.ResponseWriter, r *http.Request) {
		mr, err := r.MultipartReader()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		part, err := mr.NextPart() // the form's one part, data
		if err != nil || part.FormName() != "data" {
			http.Error(w, "want a data part", http.StatusBadRequest)
			return
		}
		data, _ := io.ReadAll(part)
		u.mu.Lock()
		id := fmt.Sprintf("part_%d", len(u.got)+1)
		u.got[id] = data
		u.mu.Unlock()
		reply(w, map[string]any{"id": id, "object": "upload.part", "created_at": 1764288000, "upload_id": "upload_1"})
	})
	mux.HandleFunc("POST /api/v1/uploads/upload_1/complete", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			PartIDs []string `json:"part_ids"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		var n int
		u.mu.Lock()
		for _, id := range req.PartIDs {
			n += len(u.got[id])
		}
		u.mu.Unlock()
		reply(w, upload("completed", map[string]any{"id": "file-1", "filename": "dataset.jsonl", "mime_type": "application/jsonl",
			"size_bytes": n, "downloadable": false, "created_at": "2026-11-28T00:00:00Z", "_shape": "service"}))
	})
	srv := httptest.NewServer(mux)
	u.url, u.close = srv.URL, srv.Close
	return u
}
