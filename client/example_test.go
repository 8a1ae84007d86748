package client_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/aigateway/gateway/client"
	"github.com/aigateway/gateway/cmd/gateway/app"
	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/policy/keys"
)

// A component that is handed a file id (in a request it serves) resolves it
// to the file's bytes with a service key: service keys may read every file
// of their user's workspaces, downloadable or not, and write nothing.
func Example_serviceKeyReadsFile() {
	gw := startExampleGateway() // a whole gateway, as `gateway serve` wires it
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

// exampleGateway is a gateway on a temporary SQLite database and directory,
// holding one file uploaded by an ordinary key of alice's.
type exampleGateway struct {
	url, serviceKey, workspaceID, fileID string
	close                                func()
}

func startExampleGateway() *exampleGateway {
	dir, err := os.MkdirTemp("", "gateway-example")
	if err != nil {
		log.Fatal(err)
	}
	cfg := configs.Default()
	cfg.Metadata = configs.Metadata{Driver: "sqlite", DSN: filepath.Join(dir, "gateway.db")}
	cfg.Storage.FS.Dir = filepath.Join(dir, "files")
	cfg.Catalog.Path = "../configs/models.yaml"
	cfg.Log.Level = "error"
	ctx := context.Background()
	sealing := "ZXhhbXBsZS1zZWFsaW5nLWtleS0zMi1ieXRlcy1sb24="
	getenv := func(name string) string {
		if name == "GATEWAY_BYOK_ENCRYPTION_KEY" {
			return sealing
		}
		return ""
	}
	rt, err := app.Open(ctx, cfg, app.Env{Getenv: getenv, Logs: io.Discard})
	if err != nil {
		log.Fatal(err)
	}
	a, err := app.Build(ctx, rt)
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler())
	gw := &exampleGateway{url: srv.URL, close: func() {
		srv.Close()
		_ = a.Close()
		_ = rt.Close()
		_ = os.RemoveAll(dir)
	}}

	token, key, err := rt.CreateKey(ctx, keys.NewKeyRequest{Name: "uploader", User: "alice", Role: keys.RoleStandard})
	if err != nil {
		log.Fatal(err)
	}
	gw.workspaceID = key.WorkspaceID
	if gw.serviceKey, _, err = rt.CreateKey(ctx, keys.NewKeyRequest{Name: "reader", User: "alice", Role: keys.RoleService}); err != nil {
		log.Fatal(err)
	}
	uploader, err := client.New(srv.URL, token)
	if err != nil {
		log.Fatal(err)
	}
	f, err := uploader.UploadFile(ctx, client.Upload{Filename: "notes.txt", Content: strings.NewReader("hello, world"), Size: 12})
	if err != nil {
		log.Fatal(err)
	}
	gw.fileID = f.ID
	return gw
}
