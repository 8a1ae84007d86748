package e2e

// Resumable uploads forwarded to OpenAI's own Uploads resource with the
// workspace's stored key (provider=openai), against the stand-in: the
// provider holds the parts and joins them, the gateway keeps the upload's
// row, its quota reservation and, at completion, the file's record, so the
// file is then listed, read and deleted like any file sent to OpenAI whole.

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/backends/providers/providertest"
	"github.com/aigateway/gateway/backends/sqlstore"
	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/policy/keys"
	"go.uber.org/zap"
)

// sendForwardedPart sends one part of upload id with the provider parameter.
func (e *fileEnv) sendForwardedPart(t *testing.T, key, id, provider string, data []byte) (int, map[string]any, []byte) {
	t.Helper()
	body, ct := fileForm(filePart{name: "data", filename: "blob", contentType: "application/octet-stream", data: data})
	resp, raw := e.g.do(t, "POST", uploadsPath+"/"+id+"/parts?provider="+provider, key, bytes.NewReader(body), http.Header{"Content-Type": {ct}})
	return resp.StatusCode, fileJSON(t, raw), raw
}

func TestResumableUploadForwardedToOpenAI(t *testing.T) {
	for _, sc := range metadataStores() {
		t.Run(sc.name, func(t *testing.T) { testForwardedUpload(t, sc) })
	}
}

// testForwardedUpload forwards an upload in three parts, completes it, and
// reads and deletes its file, on the metadata store sc.
func testForwardedUpload(t *testing.T, sc storeCase) {
	stand := providertest.NewOpenAI(t)
	cfg := fileTestConfig(t)
	cfg.Files.Downloadable = true
	storageCases()[0].configure(t, &cfg)
	sc.configure(t, &cfg)
	fileProviders()[0].set(&cfg, stand, 0)
	e := newFileEnv(t, cfg, stand)
	key, ws := e.standardKey(t, "forwarder")
	bob, _ := e.standardKey(t, "bob")
	e.setProviderKey(t, ws, "openai", providertest.OpenAIKey)
	const q = "?provider=openai"
	before := e.state(t)

	sizes := []int{2 << 20, 700 << 10, 1234}
	total := 0
	for _, n := range sizes {
		total += n
	}
	data := fileText(total)
	status, m, raw := e.uploadJSON(t, key, uploadsPath+q,
		fmt.Sprintf(`{"bytes":%d,"filename":"train/data.jsonl","mime_type":"application/jsonl","purpose":"batch"}`, total))
	if status != http.StatusOK || m["object"] != "upload" || m["status"] != "pending" || m["file"] != nil {
		t.Fatalf("create = %d %s", status, raw)
	}
	id, _ := m["id"].(string)
	su, ok := stand.Upload(id)
	if !ok || su.Bytes != int64(total) || su.Purpose != "batch" || su.Filename != "train/data.jsonl" {
		t.Fatalf("the stand-in holds %+v for %s, want the upload made there with the same id", su, id)
	}
	// The declared bytes are reserved at once, as a native upload's are.
	if r := e.residue(); len(r) == 0 {
		t.Error("a pending forwarded upload holds no reservation")
	}

	// Another user's key gets the 404 of an unknown id, on every route.
	_, unknown := e.g.do(t, "POST", uploadsPath+"/upload_unknown0000000000000000/cancel"+q, bob, nil, nil)
	form, ct := fileForm(filePart{name: "data", filename: "blob", contentType: "application/octet-stream", data: data[:10]})
	jsonType := http.Header{"Content-Type": {"application/json"}}
	for _, r := range []struct {
		method, path string
		body         []byte
		header       http.Header
	}{
		{"POST", "/parts", form, http.Header{"Content-Type": {ct}}},
		{"POST", "/complete", []byte(`{"part_ids":["part_x"]}`), jsonType},
		{"POST", "/cancel", nil, nil},
	} {
		resp, body := e.g.do(t, r.method, uploadsPath+"/"+id+r.path+q, bob, bytes.NewReader(r.body), r.header)
		if resp.StatusCode != http.StatusNotFound || !bytes.Equal(body, unknown) {
			t.Errorf("bob %s %s = %d %s, want %s", r.method, r.path, resp.StatusCode, body, unknown)
		}
	}

	// Three parts, through the gateway to the stand-in, listed out of the
	// order they were sent.
	ids := make([]string, len(sizes))
	off := 0
	for i, n := range sizes {
		chunk := data[off : off+n]
		off += n
		status, m, raw := e.sendForwardedPart(t, key, id, "openai", chunk)
		if status != http.StatusOK || m["object"] != "upload.part" || m["upload_id"] != id {
			t.Fatalf("part %d = %d %s", i, status, raw)
		}
		ids[i], _ = m["id"].(string)
	}
	if su, _ := stand.Upload(id); su.PartBytes != int64(total) || len(su.Parts) != 3 {
		t.Fatalf("the stand-in holds %+v", su)
	}
	// OpenAI lists no upload's parts, so the gateway cannot describe a
	// forwarded upload: 400 naming provider rather than an answer claiming
	// no parts.
	resp, raw := e.g.do(t, "GET", uploadsPath+"/"+id+q, key, nil, nil)
	if resp.StatusCode != http.StatusBadRequest || !fileMetaNames(fileWantEnvelope(t, raw, 400, ""), "provider") {
		t.Errorf("GET = %d %s, want 400 naming provider", resp.StatusCode, raw)
	}
	// Without provider the routes refuse it, naming provider.
	if status, _, raw := e.sendPart(t, key, id, data[:10]); status != http.StatusBadRequest || !fileMetaNames(fileWantEnvelope(t, raw, 400, ""), "provider") {
		t.Errorf("a native part to a forwarded upload = %d %s", status, raw)
	}

	sum := md5.Sum(data)
	status, m, raw = e.uploadJSON(t, key, uploadsPath+"/"+id+"/complete"+q,
		fmt.Sprintf(`{"part_ids":%s,"md5":%q}`, partIDs(ids), hex.EncodeToString(sum[:])))
	file, _ := m["file"].(map[string]any)
	if status != http.StatusOK || m["status"] != "completed" || file == nil {
		t.Fatalf("complete = %d %s", status, raw)
	}
	fileID, _ := file["id"].(string)
	stored, ok := stand.File(fileID)
	want := sha256.Sum256(data)
	if !ok || stored.Size != int64(total) || stored.SHA256 != hex.EncodeToString(want[:]) || stored.Purpose != "batch" {
		t.Fatalf("the stand-in holds %+v, want the %d bytes sent, whole", stored, total)
	}
	if file["size_bytes"] != json.Number(fmt.Sprint(total)) || file["filename"] != "train/data.jsonl" || file["id"] != fileID {
		t.Errorf("completed file = %v", file)
	}
	// An ordinary BYOK file from now on: charged, listed, read, deleted.
	if s := e.state(t); s.stored != before.stored+int64(total) || s.rows != before.rows+1 {
		t.Errorf("after completion: stored %d (was %d), %d rows (were %d)", s.stored, before.stored, s.rows, before.rows)
	}
	if r := e.residue(); len(r) != 0 {
		t.Errorf("completion left %v", r)
	}
	if ids := e.list(t, key, "provider=openai", nil).ids(t); len(ids) != 1 || ids[0] != fileID {
		t.Errorf("GET /files?provider=openai = %v, want [%s]", ids, fileID)
	}
	resp, raw = e.g.do(t, "GET", "/api/v1/files/"+fileID+q, key, nil, nil)
	if meta := fileJSON(t, raw); resp.StatusCode != http.StatusOK || meta["filename"] != "train/data.jsonl" {
		t.Errorf("metadata = %d %s", resp.StatusCode, raw)
	}
	resp, raw = e.g.do(t, "GET", "/api/v1/files/"+fileID+"/content"+q, key, nil, nil)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(raw, data) {
		t.Errorf("content = %d, %d bytes, want the %d sent", resp.StatusCode, len(raw), total)
	}
	if status, _, raw := e.uploadJSON(t, key, uploadsPath+"/"+id+"/complete"+q, fmt.Sprintf(`{"part_ids":%s}`, partIDs(ids))); status != http.StatusBadRequest {
		t.Errorf("completing twice = %d %s", status, raw)
	}
	resp, raw = e.g.do(t, "DELETE", "/api/v1/files/"+fileID+q, key, nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("delete = %d %s", resp.StatusCode, raw)
	}
	if _, ok := stand.File(fileID); ok {
		t.Error("the provider still holds the deleted file")
	}
	if p := e.leftovers(before); len(p) != 0 {
		t.Errorf("after delete: %v", p)
	}
}

func TestResumableUploadForwardedRefusals(t *testing.T) {
	stand := providertest.NewOpenAI(t)
	cfg := fileTestConfig(t)
	storageCases()[0].configure(t, &cfg)
	fileProviders()[0].set(&cfg, stand, 0)
	e := newFileEnv(t, cfg, stand)
	key, ws := e.standardKey(t, "careful")
	noKey, _ := e.standardKey(t, "keyless")
	e.setProviderKey(t, ws, "openai", providertest.OpenAIKey)
	before := e.state(t)
	create := func(query string) (int, map[string]any, []byte) {
		return e.uploadJSON(t, key, uploadsPath+query, `{"bytes":10,"filename":"a.txt","mime_type":"text/plain","purpose":"user_data"}`)
	}

	// Anthropic has no Uploads resource: 400 naming provider, on every
	// route, before anything is sent anywhere.
	native := e.createUpload(t, key, "a.txt", "text/plain", 10)
	for name, call := range map[string]func() (int, []byte){
		"create": func() (int, []byte) { s, _, raw := create("?provider=anthropic"); return s, raw },
		"part": func() (int, []byte) {
			s, _, raw := e.sendForwardedPart(t, key, native, "anthropic", []byte("x"))
			return s, raw
		},
		"get": func() (int, []byte) { // anthropic's refusal, not openai's
			resp, raw := e.g.do(t, "GET", uploadsPath+"/"+native+"?provider=anthropic", key, nil, nil)
			return resp.StatusCode, raw
		},
		"cancel": func() (int, []byte) {
			resp, raw := e.g.do(t, "POST", uploadsPath+"/"+native+"/cancel?provider=anthropic", key, nil, nil)
			return resp.StatusCode, raw
		},
		"empty provider": func() (int, []byte) { s, _, raw := create("?provider="); return s, raw },
		// A native upload is not sent to OpenAI.
		"native upload with provider=openai": func() (int, []byte) {
			s, _, raw := e.sendForwardedPart(t, key, native, "openai", []byte("x"))
			return s, raw
		},
		"no stored key": func() (int, []byte) {
			s, _, raw := e.uploadJSON(t, noKey, uploadsPath+"?provider=openai", `{"bytes":10,"filename":"a.txt","mime_type":"text/plain","purpose":"user_data"}`)
			return s, raw
		},
	} {
		status, raw := call()
		if status != http.StatusBadRequest || !fileMetaNames(fileWantEnvelope(t, raw, 400, ""), "provider") {
			t.Errorf("%s = %d %s, want 400 naming provider", name, status, raw)
		}
	}
	if n := len(stand.Requests()); n != 0 {
		t.Errorf("%d requests reached the provider", n)
	}
	if resp, raw := e.g.do(t, "POST", uploadsPath+"/"+native+"/cancel", key, nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("cancel native = %d %s", resp.StatusCode, raw)
	}

	// A provider's refusal is passed on in the envelope: 400 with its
	// status and request id, never its message.
	status, m, raw := create("?provider=openai")
	if status != http.StatusOK {
		t.Fatalf("create = %d %s", status, raw)
	}
	id, _ := m["id"].(string)
	stand.FailUploadRoutes(http.StatusBadRequest)
	status, _, raw = e.sendForwardedPart(t, key, id, "openai", []byte("hello"))
	md := fileWantEnvelope(t, raw, http.StatusBadRequest, "")
	reqs := stand.Requests()
	if status != http.StatusBadRequest || md["provider"] != "openai" || md["provider_status"] != json.Number("400") ||
		md["provider_request_id"] != reqs[len(reqs)-1].RequestID || strings.Contains(string(raw), "stand-in") {
		t.Errorf("provider refusal = %d %s", status, raw)
	}
	// Its throttling is the client's 429, with the provider's Retry-After.
	stand.FailUploadRoutes(http.StatusTooManyRequests)
	stand.RetryAfter("7")
	resp, raw := e.g.do(t, "POST", uploadsPath+"/"+id+"/complete?provider=openai", key, strings.NewReader(`{"part_ids":["part_a"]}`), http.Header{"Content-Type": {"application/json"}})
	if md := fileWantEnvelope(t, raw, http.StatusTooManyRequests, ""); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "7" || md["provider_status"] != json.Number("429") {
		t.Errorf("provider throttling = %d %s (Retry-After %q)", resp.StatusCode, raw, resp.Header.Get("Retry-After"))
	}
	// A cancel the provider refuses leaves the upload pending here, to be
	// sent again.
	if resp, raw := e.g.do(t, "POST", uploadsPath+"/"+id+"/cancel?provider=openai", key, nil, nil); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("cancel refused by the provider = %d %s", resp.StatusCode, raw)
	}
	stand.Reset()
	if status, _, raw := e.sendForwardedPart(t, key, id, "openai", []byte("hello")); status != http.StatusOK {
		t.Fatalf("part = %d %s", status, raw)
	}
	// Past the upload's declared bytes: refused while streaming.
	if status, _, raw := e.sendForwardedPart(t, key, id, "openai", bytes.Repeat([]byte("x"), 11)); status != http.StatusBadRequest {
		t.Errorf("a part past the upload's bytes = %d %s", status, raw)
	}

	// Cancelled: nothing held, here or at the provider.
	resp, raw = e.g.do(t, "POST", uploadsPath+"/"+id+"/cancel?provider=openai", key, nil, nil)
	if m := fileJSON(t, raw); resp.StatusCode != http.StatusOK || m["status"] != "cancelled" {
		t.Fatalf("cancel = %d %s", resp.StatusCode, raw)
	}
	if su, _ := stand.Upload(id); su.Status != "cancelled" || len(su.Parts) != 0 {
		t.Errorf("the provider keeps %+v", su)
	}
	if p := e.leftovers(before); len(p) != 0 {
		t.Errorf("after cancel: %v", p)
	}
	if status, _, raw := e.sendForwardedPart(t, key, id, "openai", []byte("x")); status != http.StatusBadRequest {
		t.Errorf("a part to a cancelled upload = %d %s", status, raw)
	}
}

func TestResumableUploadForwardedPartTooLarge(t *testing.T) {
	stand := providertest.NewOpenAI(t)
	cfg := fileTestConfig(t)
	storageCases()[0].configure(t, &cfg)
	fileProviders()[0].set(&cfg, stand, 0)
	e := newFileEnv(t, cfg, stand)
	key, ws := e.standardKey(t, "big")
	e.setProviderKey(t, ws, "openai", providertest.OpenAIKey)
	status, m, raw := e.uploadJSON(t, key, uploadsPath+"?provider=openai", `{"bytes":100000000,"filename":"a.bin","mime_type":"application/octet-stream","purpose":"batch"}`)
	if status != http.StatusOK {
		t.Fatalf("create = %d %s", status, raw)
	}
	id, _ := m["id"].(string)
	n := len(stand.Requests())
	// A declared Content-Length over 64 MiB is refused before reading.
	req, err := http.NewRequest("POST", e.g.URL+uploadsPath+"/"+id+"/parts?provider=openai", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = 65 << 20
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "multipart/form-data; boundary=x")
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("declared 65 MiB part = %d, want 413", resp.StatusCode)
		}
	}
	if got := len(stand.Requests()); got != n {
		t.Errorf("%d requests reached the provider", got-n)
	}
}

// BenchmarkNativePartDestinationCheck: what telling native uploads from
// forwarded ones adds to a native part. Every route without provider first
// asks the store which destination the upload has (UploadBackend, one
// primary-key read); it is measured alone, beside the part it precedes: a
// 256 KiB part sent through the whole gateway on the embedded default (fs
// backend, SQLite), in the same run. Run with -count and compare ns/op.
func BenchmarkNativePartDestinationCheck(b *testing.B) {
	const partSize = 256 << 10
	dir := b.TempDir()
	cfg := configs.Default()
	cfg.Metadata = configs.Metadata{Driver: "sqlite", DSN: filepath.Join(dir, "gateway.db")}
	cfg.Storage.FS.Dir = filepath.Join(dir, "files")
	cfg.Catalog.Path = "../../configs/models.yaml"
	cfg.Limits.Rate.Files = configs.Rate{Requests: 1 << 30, Per: time.Second, Burst: 1 << 30}
	cfg.Limits.Rate.Default = configs.Rate{Requests: 1 << 30, Per: time.Second, Burst: 1 << 30}
	cfg.Limits.UploadsInFlightPerKey = 64
	cfg.Limits.UploadBytes = configs.ByteBudget{Bytes: 1 << 50, Per: time.Hour}
	cfg.Limits.WorkspaceStorageBytes = 1 << 50
	rt, a := buildApp(b, cfg, io.Discard)
	gw := httptest.NewServer(a.Handler())
	b.Cleanup(func() { gw.Close(); a.WaitUploads(); _ = a.Close(); _ = rt.Close() })
	key, _, err := rt.CreateKey(context.Background(), keys.NewKeyRequest{Name: "bench", User: "alice", Role: keys.RoleStandard})
	if err != nil {
		b.Fatal(err)
	}
	client := &http.Client{}
	post := func(path, ctype string, body []byte) map[string]any {
		req, err := http.NewRequest("POST", gw.URL+path, bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", ctype)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("POST %s = %d %v (%v)", path, resp.StatusCode, m, err)
		}
		return m
	}
	newUpload := func() string {
		m := post(uploadsPath, "application/json", []byte(`{"bytes":8589934592,"filename":"a.bin","mime_type":"application/octet-stream","purpose":"batch"}`))
		return m["id"].(string)
	}
	form, ct := fileForm(filePart{name: "data", filename: "blob", contentType: "application/octet-stream", data: fileNoise(partSize, 1)})
	id := newUpload()

	st, err := sqlstore.Open(context.Background(), "sqlite", cfg.Metadata.DSN, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	db, err := sql.Open("sqlite", cfg.Metadata.DSN)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	var ws string
	if err := db.QueryRow(`SELECT workspace_id FROM uploads WHERE id = ?`, id).Scan(&ws); err != nil {
		b.Fatal(err)
	}

	b.Run("part", func(b *testing.B) {
		b.SetBytes(partSize)
		parts := 0
		for b.Loop() {
			post(uploadsPath+"/"+id+"/parts", ct, form)
			if parts++; parts == 5000 {
				b.StopTimer()
				id, parts = newUpload(), 0
				b.StartTimer()
			}
		}
	})
	b.Run("destination-check", func(b *testing.B) {
		for b.Loop() {
			if backend, err := st.UploadBackend(b.Context(), ws, id); err != nil || backend != "" {
				b.Fatalf("UploadBackend = %q, %v", backend, err)
			}
		}
	})
}
