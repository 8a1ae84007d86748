package client_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"

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
