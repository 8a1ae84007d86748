package e2e

// Resumable uploads, end to end: a file sent in parts (out of order, at
// once), assembled in each storage backend, read back whole; and every
// refusal the contract names leaving nothing made and nothing held.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/files"
)

const uploadsPath = "/api/v1/uploads"

// uploadJSON posts a JSON body to an uploads route and decodes the answer.
func (e *fileEnv) uploadJSON(t *testing.T, key, path, body string) (int, map[string]any, []byte) {
	t.Helper()
	resp, raw := e.g.do(t, "POST", path, key, strings.NewReader(body), http.Header{"Content-Type": {"application/json"}})
	return resp.StatusCode, fileJSON(t, raw), raw
}

// createUpload starts an upload and returns its id.
func (e *fileEnv) createUpload(t *testing.T, key, filename, mimeType string, size int) string {
	t.Helper()
	status, m, raw := e.uploadJSON(t, key, uploadsPath,
		fmt.Sprintf(`{"bytes":%d,"filename":%q,"mime_type":%q,"purpose":"assistants"}`, size, filename, mimeType))
	if status != http.StatusOK {
		t.Fatalf("create upload = %d %s", status, raw)
	}
	if m["object"] != "upload" || m["status"] != "pending" || m["file"] != nil || m["bytes"] != json.Number(fmt.Sprint(size)) {
		t.Fatalf("created upload = %s", raw)
	}
	id, _ := m["id"].(string)
	if !strings.HasPrefix(id, "upload_") {
		t.Fatalf("upload id %q", id)
	}
	return id
}

// sendPart sends one part and returns the answer.
func (e *fileEnv) sendPart(t *testing.T, key, id string, data []byte) (int, map[string]any, []byte) {
	t.Helper()
	body, ct := fileForm(filePart{name: "data", filename: "blob", contentType: "application/octet-stream", data: data})
	resp, raw := e.g.do(t, "POST", uploadsPath+"/"+id+"/parts", key, bytes.NewReader(body), http.Header{"Content-Type": {ct}})
	return resp.StatusCode, fileJSON(t, raw), raw
}

// getUpload reads an upload with its parts.
func (e *fileEnv) getUpload(t *testing.T, key, id string) map[string]any {
	t.Helper()
	resp, raw := e.g.do(t, "GET", uploadsPath+"/"+id, key, nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET upload = %d %s", resp.StatusCode, raw)
	}
	return fileJSON(t, raw)
}

func partIDs(ids []string) string {
	b, _ := json.Marshal(ids)
	return string(b)
}

func TestResumableUpload(t *testing.T) {
	for _, sc := range storageCases() {
		t.Run(sc.name, func(t *testing.T) {
			cfg := fileTestConfig(t)
			cfg.Files.Downloadable = true
			sc.configure(t, &cfg)
			e := newFileEnv(t, cfg)
			key, ws := e.standardKey(t, "uploader")
			before := e.state(t)

			// Parts below S3's 5 MiB minimum in every position but the
			// last, and one above it, sent at once, in no order.
			sizes := []int{6 << 20, 1 << 20, 300 << 10, 5 << 20, 2 << 20, 1000}
			total := 0
			for _, n := range sizes {
				total += n
			}
			data := filePDF(total)
			id := e.createUpload(t, key, "dataset.pdf", "application/pdf", total)

			ids := make([]string, len(sizes))
			var wg sync.WaitGroup
			errs := make(chan string, len(sizes))
			off := 0
			for i, n := range sizes {
				chunk := data[off : off+n]
				off += n
				wg.Go(func() {
					status, m, raw := e.sendPart(t, key, id, chunk)
					if status != http.StatusOK || m["object"] != "upload.part" || m["upload_id"] != id {
						errs <- fmt.Sprintf("part %d = %d %s", i, status, raw)
						return
					}
					ids[i], _ = m["id"].(string)
				})
			}
			wg.Wait()
			close(errs)
			for msg := range errs {
				t.Fatal(msg)
			}

			got := e.getUpload(t, key, id)
			parts, _ := got["parts"].([]any)
			if len(parts) != len(sizes) || got["status"] != "pending" {
				t.Fatalf("GET upload before completing = %v", got)
			}

			// A wrong order's md5 does not match: refused, still pending.
			// (The first part stays first, so the type still holds.)
			wrong := slices.Clone(ids)
			wrong[1], wrong[2] = wrong[2], wrong[1]
			sum := md5.Sum(data)
			status, _, raw := e.uploadJSON(t, key, uploadsPath+"/"+id+"/complete",
				fmt.Sprintf(`{"part_ids":%s,"md5":%q}`, partIDs(wrong), hex.EncodeToString(sum[:])))
			if status != http.StatusBadRequest || !strings.Contains(string(raw), "md5") {
				t.Fatalf("complete in the wrong order with the md5 = %d %s, want 400 naming md5", status, raw)
			}
			if st := e.getUpload(t, key, id)["status"]; st != "pending" {
				t.Fatalf("after a refused complete: status %v, want pending", st)
			}

			status, m, raw := e.uploadJSON(t, key, uploadsPath+"/"+id+"/complete",
				fmt.Sprintf(`{"part_ids":%s,"md5":%q}`, partIDs(ids), hex.EncodeToString(sum[:])))
			if status != http.StatusOK || m["status"] != "completed" {
				t.Fatalf("complete = %d %s", status, raw)
			}
			file, _ := m["file"].(map[string]any)
			fileID, _ := file["id"].(string)
			if fileID == "" || file["size_bytes"] != json.Number(fmt.Sprint(total)) || file["mime_type"] != "application/pdf" {
				t.Fatalf("completed upload's file = %v", file)
			}
			e.wantStored(t, ws, fileID, "dataset.pdf", "application/pdf", data)

			// The file is an ordinary file: read back whole, and with a range.
			resp, content := e.g.do(t, "GET", "/api/v1/files/"+fileID+"/content", key, nil, nil)
			if resp.StatusCode != http.StatusOK || !bytes.Equal(content, data) {
				t.Fatalf("content = %d, %d bytes; want 200 and the %d bytes sent", resp.StatusCode, len(content), total)
			}
			resp, content = e.g.do(t, "GET", "/api/v1/files/"+fileID+"/content", key, nil, http.Header{"Range": {"bytes=1048570-1048585"}})
			if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(content, data[1048570:1048586]) {
				t.Fatalf("range across the first parts' seam = %d %q", resp.StatusCode, content)
			}

			// Completed: its parts are gone, its answer keeps the file.
			got = e.getUpload(t, key, id)
			if got["status"] != "completed" || len(got["parts"].([]any)) != 0 {
				t.Errorf("GET completed upload = %v, want completed with no parts left", got)
			}
			status, _, raw = e.uploadJSON(t, key, uploadsPath+"/"+id+"/complete", fmt.Sprintf(`{"part_ids":%s}`, partIDs(ids)))
			if status != http.StatusBadRequest || !strings.Contains(string(raw), "completed") {
				t.Errorf("completing twice = %d %s, want 400 naming the status", status, raw)
			}
			status, _, raw = e.sendPart(t, key, id, []byte("late"))
			if status != http.StatusBadRequest || !strings.Contains(string(raw), "completed") {
				t.Errorf("a part after completion = %d %s, want 400 naming the status", status, raw)
			}

			// Only the file is left: no part, no reservation, and the
			// workspace is charged the file's size.
			after := e.state(t)
			wantObjects := slices.Sorted(slices.Values(append(slices.Clone(before.objects), files.ObjectKey(ws, fileID))))
			if !slices.Equal(after.objects, wantObjects) || after.rows != before.rows+1 || after.stored != before.stored+int64(total) {
				t.Errorf("after completing: objects %v, %d rows, %d bytes stored; want %v, %d, %d",
					after.objects, after.rows, after.stored, wantObjects, before.rows+1, before.stored+int64(total))
			}
			for _, p := range e.residue() {
				t.Errorf("left behind: %s", p)
			}
		})
	}
}

func TestResumableUploadRefusals(t *testing.T) {
	cfg := fileTestConfig(t)
	storageCases()[0].configure(t, &cfg)
	cfg.Limits.WorkspaceStorageBytes = 64 << 20
	cfg.Limits.MaxFileBytes = 1 << 20
	e := newFileEnv(t, cfg)
	key, _ := e.standardKey(t, "careful")
	otherKey, _ := e.standardKey(t, "other")
	before := e.state(t)

	for name, body := range map[string]string{
		"bytes 0":         `{"bytes":0,"filename":"a.txt","mime_type":"text/plain","purpose":"batch"}`,
		"bytes too many":  `{"bytes":9000000000000,"filename":"a.txt","mime_type":"text/plain","purpose":"batch"}`,
		"unknown field":   `{"bytes":10,"filename":"a.txt","mime_type":"text/plain","purpose":"batch","color":"red"}`,
		"missing purpose": `{"bytes":10,"filename":"a.txt","mime_type":"text/plain"}`,
		"bad purpose":     `{"bytes":10,"filename":"a.txt","mime_type":"text/plain","purpose":"nope"}`,
		"bad filename":    `{"bytes":10,"filename":"../a.txt","mime_type":"text/plain","purpose":"batch"}`,
		"bad mime":        `{"bytes":10,"filename":"a.txt","mime_type":"///","purpose":"batch"}`,
		"expires_after":   `{"bytes":10,"filename":"a.txt","mime_type":"text/plain","purpose":"batch","expires_after":{"anchor":"created_at","seconds":3600}}`,
		"malformed":       `{"bytes":10,`,
		"duplicate key":   `{"bytes":10,"bytes":11,"filename":"a.txt","mime_type":"text/plain","purpose":"batch"}`,
	} {
		status, m, raw := e.uploadJSON(t, key, uploadsPath, body)
		if status != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", name, status, raw)
			continue
		}
		if _, ok := m["error"].(map[string]any)["metadata"].(map[string]any)["fields"]; !ok {
			t.Errorf("%s: %s names no field", name, raw)
		}
	}
	// Over the quota: the same refusal as an upload.
	status, _, raw := e.uploadJSON(t, key, uploadsPath, fmt.Sprintf(`{"bytes":%d,"filename":"a.txt","mime_type":"text/plain","purpose":"batch"}`, 65<<20))
	if status != http.StatusForbidden || !strings.Contains(string(raw), fileMsgQuota) {
		t.Errorf("over the quota: %d %s, want 403 %q", status, raw, fileMsgQuota)
	}

	// An upload larger than one request may hold (max_file_bytes is 1 MiB).
	data := fileText(3 << 20)
	id := e.createUpload(t, key, "notes.txt", "text/plain", len(data))

	// Another user's key, and an unknown id, get the same 404, byte for byte.
	resp1, unknown := e.g.do(t, "GET", uploadsPath+"/upload_aaaaaaaaaaaaaaaaaaaaaaaa", otherKey, nil, nil)
	resp2, foreign := e.g.do(t, "GET", uploadsPath+"/"+id, otherKey, nil, nil)
	if resp1.StatusCode != http.StatusNotFound || resp2.StatusCode != http.StatusNotFound || !bytes.Equal(unknown, foreign) {
		t.Errorf("unknown id %d %s; another user's %d %s: want the same 404", resp1.StatusCode, unknown, resp2.StatusCode, foreign)
	}
	if status, _, raw := e.sendPart(t, otherKey, id, data[:10]); status != http.StatusNotFound {
		t.Errorf("a part to another user's upload = %d %s, want 404", status, raw)
	}

	// Parts: more than the upload takes is refused and not kept.
	p1 := data[:2<<20]
	status, m, raw := e.sendPart(t, key, id, p1)
	if status != http.StatusOK {
		t.Fatalf("part 1 = %d %s", status, raw)
	}
	first, _ := m["id"].(string)
	if status, _, raw := e.sendPart(t, key, id, data[:(1<<20)+1]); status != http.StatusBadRequest || !strings.Contains(string(raw), "data") {
		t.Errorf("a part past the upload's bytes = %d %s, want 400 naming data", status, raw)
	}
	if status, _, raw := e.sendPart(t, key, id, nil); status != http.StatusBadRequest {
		t.Errorf("an empty part = %d %s, want 400", status, raw)
	}
	// A form with two data parts keeps neither.
	twice, ct := fileForm(filePart{name: "data", filename: "a", data: data[:10]}, filePart{name: "data", filename: "b", data: data[:10]})
	resp, raw := e.g.do(t, "POST", uploadsPath+"/"+id+"/parts", key, bytes.NewReader(twice), http.Header{"Content-Type": {ct}})
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("two data parts = %d %s, want 400", resp.StatusCode, raw)
	}
	// A declared length over the part limit is refused before reading.
	req, _ := http.NewRequest("POST", e.g.URL+uploadsPath+"/"+id+"/parts", strings.NewReader("x"))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "multipart/form-data; boundary=x")
	req.ContentLength = 65 << 20
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("a part declared at 65 MiB = %d, want 413", resp.StatusCode)
		}
	}
	if parts := e.getUpload(t, key, id)["parts"].([]any); len(parts) != 1 {
		t.Fatalf("after the refused parts: %d parts stored, want 1", len(parts))
	}

	// Completion refusals leave it pending.
	for name, body := range map[string]string{
		"short":    fmt.Sprintf(`{"part_ids":[%q]}`, first),
		"repeated": fmt.Sprintf(`{"part_ids":[%q,%q]}`, first, first),
		"unknown":  `{"part_ids":["part_nope"]}`,
		"empty":    `{"part_ids":[]}`,
		"bad md5":  fmt.Sprintf(`{"part_ids":[%q],"md5":"xyz"}`, first),
		"missing":  `{}`,
	} {
		status, _, raw := e.uploadJSON(t, key, uploadsPath+"/"+id+"/complete", body)
		if status != http.StatusBadRequest {
			t.Errorf("complete %s = %d %s, want 400", name, status, raw)
		}
	}
	status, m, raw = e.sendPart(t, key, id, data[2<<20:])
	if status != http.StatusOK {
		t.Fatalf("part 2 = %d %s", status, raw)
	}
	second, _ := m["id"].(string)

	// The declared type contradicts the content: refused, still pending,
	// nothing made.
	pdfID := e.createUpload(t, key, "paper.pdf", "application/pdf", 100)
	status, m, raw = e.sendPart(t, key, pdfID, fileText(100))
	if status != http.StatusOK {
		t.Fatalf("pdf part = %d %s", status, raw)
	}
	textPart, _ := m["id"].(string)
	status, _, raw = e.uploadJSON(t, key, uploadsPath+"/"+pdfID+"/complete", fmt.Sprintf(`{"part_ids":[%q]}`, textPart))
	if status != http.StatusBadRequest || !strings.Contains(string(raw), "mime_type") {
		t.Errorf("text declared as a PDF = %d %s, want 400 naming mime_type", status, raw)
	}

	// Cancelling removes the parts and releases the quota.
	status, m, raw = e.uploadJSON(t, key, uploadsPath+"/"+pdfID+"/cancel", "{}")
	if status != http.StatusOK || m["status"] != "cancelled" {
		t.Errorf("cancel = %d %s", status, raw)
	}
	status, _, raw = e.sendPart(t, key, pdfID, fileText(10))
	if status != http.StatusBadRequest || !strings.Contains(string(raw), "cancelled") {
		t.Errorf("a part after cancel = %d %s, want 400 naming the status", status, raw)
	}
	status, _, raw = e.uploadJSON(t, key, uploadsPath+"/"+pdfID+"/cancel", "{}")
	if status != http.StatusBadRequest {
		t.Errorf("cancelling twice = %d %s, want 400", status, raw)
	}

	// The text upload completes in order.
	status, m, raw = e.uploadJSON(t, key, uploadsPath+"/"+id+"/complete", fmt.Sprintf(`{"part_ids":[%q,%q]}`, first, second))
	if status != http.StatusOK || m["status"] != "completed" {
		t.Fatalf("complete = %d %s", status, raw)
	}
	fileID := m["file"].(map[string]any)["id"].(string)
	resp, _ = e.g.do(t, "DELETE", "/api/v1/files/"+fileID, key, nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("delete the assembled file = %d", resp.StatusCode)
	}
	// Everything is as before: no part, no reservation, no object.
	e.awaitNothingLeft(t, before, 10*time.Second)
}

// A pending upload left alone expires: the sweeper removes its parts and
// its reservation no longer holds the quota.
func TestResumableUploadExpires(t *testing.T) {
	cfg := fileTestConfig(t)
	storageCases()[0].configure(t, &cfg)
	cfg.Uploads.TTL = time.Second
	cfg.Sweeper = configs.Sweeper{Interval: 100 * time.Millisecond, Grace: cfg.Sweeper.Grace, Batch: 100}
	e := newFileEnv(t, cfg)
	key, _ := e.standardKey(t, "forgetful")
	before := e.state(t)
	id := e.createUpload(t, key, "notes.txt", "text/plain", 1000)
	if status, _, raw := e.sendPart(t, key, id, fileText(400)); status != http.StatusOK {
		t.Fatalf("part = %d %s", status, raw)
	}
	deadline := time.Now().Add(15 * time.Second)
	for e.getUpload(t, key, id)["status"] != "expired" {
		if time.Now().After(deadline) {
			t.Fatal("the upload did not expire")
		}
		time.Sleep(100 * time.Millisecond) // poll interval
	}
	if status, _, raw := e.sendPart(t, key, id, fileText(10)); status != http.StatusBadRequest || !strings.Contains(string(raw), "expired") {
		t.Errorf("a part after expiry = %d %s, want 400 naming the status", status, raw)
	}
	e.awaitNothingLeft(t, before, 15*time.Second)
}

// Text in parts is judged as text whole, from what each part learned as it
// arrived: a rune cut between parts is accepted, a binary part in the middle
// of a text file is refused, with or without an md5 (which reads the file
// back).
func TestResumableUploadJudgesText(t *testing.T) {
	cfg := fileTestConfig(t)
	storageCases()[0].configure(t, &cfg)
	e := newFileEnv(t, cfg)
	key, ws := e.standardKey(t, "writer")
	text := bytes.Repeat([]byte("naïve café ✓ 日本語\n"), 8000) // about 200 KiB, past the sniffing window
	send := func(id string, pieces ...[]byte) []string {
		var ids []string
		for _, p := range pieces {
			status, m, raw := e.sendPart(t, key, id, p)
			if status != http.StatusOK {
				t.Fatalf("part = %d %s", status, raw)
			}
			ids = append(ids, m["id"].(string))
		}
		return ids
	}
	// Cut inside "ï" (2 bytes) and inside "✓" (3 bytes), in three parts.
	cut1 := bytes.Index(text, []byte("ï")) + 1
	cut2 := 100_000 + bytes.Index(text[100_000:], []byte("✓")) + 2
	id := e.createUpload(t, key, "notes.md", "text/markdown", len(text))
	ids := send(id, text[:cut1], text[cut1:cut2], text[cut2:])
	status, m, raw := e.uploadJSON(t, key, uploadsPath+"/"+id+"/complete", fmt.Sprintf(`{"part_ids":%s}`, partIDs(ids)))
	if status != http.StatusOK {
		t.Fatalf("text cut inside runes = %d %s", status, raw)
	}
	fileID := m["file"].(map[string]any)["id"].(string)
	e.wantStored(t, ws, fileID, "notes.md", "text/markdown", text)

	// Listed out of order, the cut runes no longer join.
	id = e.createUpload(t, key, "notes.md", "text/markdown", len(text))
	ids = send(id, text[:cut1], text[cut1:cut2], text[cut2:])
	status, _, raw = e.uploadJSON(t, key, uploadsPath+"/"+id+"/complete", fmt.Sprintf(`{"part_ids":%s}`, partIDs([]string{ids[0], ids[2], ids[1]})))
	if status != http.StatusBadRequest || !strings.Contains(string(raw), "file") {
		t.Errorf("runes cut and joined wrong = %d %s, want 400", status, raw)
	}

	// A binary part after the sniffing window: refused without reading back,
	// and with an md5 too.
	binary := append(append(slices.Clone(text[:100_000]), 0, 1, 2, 3), text[100_000:]...)
	for _, withMD5 := range []bool{false, true} {
		id = e.createUpload(t, key, "notes.txt", "text/plain", len(binary))
		ids = send(id, binary[:100_000], binary[100_000:])
		body := fmt.Sprintf(`{"part_ids":%s}`, partIDs(ids))
		if withMD5 {
			sum := md5.Sum(binary)
			body = fmt.Sprintf(`{"part_ids":%s,"md5":%q}`, partIDs(ids), hex.EncodeToString(sum[:]))
		}
		status, _, raw = e.uploadJSON(t, key, uploadsPath+"/"+id+"/complete", body)
		if status != http.StatusBadRequest || !strings.Contains(string(raw), "file") {
			t.Errorf("binary inside text (md5 %v) = %d %s, want 400 naming file", withMD5, status, raw)
		}
		if st := e.getUpload(t, key, id)["status"]; st != "pending" {
			t.Errorf("after the refusal: %v, want pending", st)
		}
	}
}

// Two replicas on one PostgreSQL and one S3 bucket, as behind a load
// balancer: parts go to either, completions race on both (one wins, one
// file), and a part racing a cancel is either kept before the cancel or
// refused, never left behind.
func TestResumableUploadAcrossReplicas(t *testing.T) {
	cfg := fileTestConfig(t)
	metadataStores()[1].configure(t, &cfg)
	storageCases()[1].configure(t, &cfg)
	e := newFileEnv(t, cfg)
	second := startGateway(t, cfg)
	replicas := []*testGateway{e.g, second}
	key, ws := e.standardKey(t, "fleet")
	before := e.state(t)

	post := func(g *testGateway, path, body string) (int, map[string]any) {
		resp, raw := g.do(t, "POST", path, key, strings.NewReader(body), http.Header{"Content-Type": {"application/json"}})
		return resp.StatusCode, fileJSON(t, raw)
	}
	part := func(g *testGateway, id string, data []byte) (int, map[string]any) {
		body, ct := fileForm(filePart{name: "data", filename: "blob", data: data})
		resp, raw := g.do(t, "POST", uploadsPath+"/"+id+"/parts", key, bytes.NewReader(body), http.Header{"Content-Type": {ct}})
		return resp.StatusCode, fileJSON(t, raw)
	}

	const nParts = 8
	data := filePNG(nParts * 700 << 10)
	id := e.createUpload(t, key, "frames.png", "image/png", len(data))
	ids := make([]string, nParts)
	var wg sync.WaitGroup
	for i := range nParts {
		wg.Go(func() {
			status, m := part(replicas[i%2], id, data[i*700<<10:(i+1)*700<<10])
			if status != http.StatusOK {
				t.Errorf("part %d on replica %d = %d %v", i, i%2, status, m)
				return
			}
			ids[i] = m["id"].(string)
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	statuses := make([]int, 2)
	fileIDs := make([]string, 2)
	for i, g := range replicas {
		wg.Go(func() {
			status, m := post(g, uploadsPath+"/"+id+"/complete", fmt.Sprintf(`{"part_ids":%s}`, partIDs(ids)))
			statuses[i] = status
			if f, ok := m["file"].(map[string]any); ok {
				fileIDs[i], _ = f["id"].(string)
			}
		})
	}
	wg.Wait()
	slices.Sort(statuses)
	if !slices.Equal(statuses, []int{http.StatusOK, http.StatusBadRequest}) {
		t.Fatalf("racing completes answered %v, want one 200 and one 400", statuses)
	}
	winner := fileIDs[0] + fileIDs[1]
	e.wantStored(t, ws, winner, "frames.png", "image/png", data)

	// A part racing a cancel: kept (and then removed with the others) or
	// refused; never an object left.
	for round := range 5 {
		id := e.createUpload(t, key, "frames.png", "image/png", len(data))
		if status, m := part(e.g, id, data[:700<<10]); status != http.StatusOK {
			t.Fatalf("round %d: first part = %d %v", round, status, m)
		}
		var partStatus, cancelStatus int
		wg.Go(func() { partStatus, _ = part(second, id, data[700<<10:2*700<<10]) })
		wg.Go(func() { cancelStatus, _ = post(e.g, uploadsPath+"/"+id+"/cancel", "{}") })
		wg.Wait()
		if cancelStatus != http.StatusOK || (partStatus != http.StatusOK && partStatus != http.StatusBadRequest) {
			t.Errorf("round %d: part %d, cancel %d; want the cancel to win and the part kept or refused", round, partStatus, cancelStatus)
		}
	}
	// Only the winner's file is left once the cancelled uploads' parts are
	// removed (by the cancel, or the sweeper for a part recorded after it).
	resp, _ := e.g.do(t, "DELETE", "/api/v1/files/"+winner, key, nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("delete = %d", resp.StatusCode)
	}
	e.awaitNothingLeft(t, before, 20*time.Second)
}

// A part that stalls or is cut off is not kept, holds nothing, and can be
// sent again.
func TestResumableUploadPartCutOff(t *testing.T) {
	cfg := fileTestConfig(t)
	storageCases()[0].configure(t, &cfg)
	cfg.Server.BodyReadTimeout = time.Second
	e := newFileEnv(t, cfg)
	key, ws := e.standardKey(t, "flaky")
	data := filePDF(3 << 20)
	id := e.createUpload(t, key, "paper.pdf", "application/pdf", len(data))
	body, ct := fileForm(filePart{name: "data", filename: "blob", data: data})
	addr := strings.TrimPrefix(e.g.URL, "http://")
	head := func(conn net.Conn) {
		t.Helper()
		h := strings.Replace(fileRequestHead(addr, key, "", ct, int64(len(body))), fileUploadPath, uploadsPath+"/"+id+"/parts", 1)
		if _, err := io.WriteString(conn, h); err != nil {
			t.Fatal(err)
		}
	}

	// Cut off at half: the connection closed.
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	head(conn)
	if _, err := conn.Write(body[:len(body)/2]); err != nil {
		t.Fatal(err)
	}
	conn.Close()

	// Stalled at a third: the gateway answers 408 once the body stops.
	conn, err = net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	head(conn)
	if _, err := conn.Write(body[:len(body)/3]); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("stalled part: no answer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("stalled part = %d, want 408", resp.StatusCode)
	}

	// Neither was kept; the part sent again completes the file.
	deadline := time.Now().Add(10 * time.Second)
	for {
		parts := e.getUpload(t, key, id)["parts"].([]any)
		objs, _ := e.bucket.List(context.Background(), files.PartObjectPrefix)
		if len(parts) == 0 && len(objs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the cut-off parts: %d parts recorded, objects %v; want none", len(parts), objs)
		}
		time.Sleep(50 * time.Millisecond) // poll interval: the cut-off one is undone after its answer
	}
	status, m, raw := e.sendPart(t, key, id, data)
	if status != http.StatusOK {
		t.Fatalf("part sent again = %d %s", status, raw)
	}
	status, m, raw = e.uploadJSON(t, key, uploadsPath+"/"+id+"/complete", fmt.Sprintf(`{"part_ids":[%q]}`, m["id"]))
	if status != http.StatusOK {
		t.Fatalf("complete = %d %s", status, raw)
	}
	e.wantStored(t, ws, m["file"].(map[string]any)["id"].(string), "paper.pdf", "application/pdf", data)
}

// TestResumableUploadLinkedOnFS: on the fs backend, parts of 32 MiB or more
// become the file without a copy (their files are linked into it) and
// smaller ones between them are copied; the file reads whole and across
// every seam, and its delete leaves nothing of it.
func TestResumableUploadLinkedOnFS(t *testing.T) {
	cfg := fileTestConfig(t)
	cfg.Files.Downloadable = true
	cfg.Storage.Backend = "fs"
	cfg.Storage.FS.Dir = filepath.Join(t.TempDir(), "files")
	cfg.Limits.WorkspaceStorageBytes = 1 << 30
	cfg.Limits.MaxFileBytes = 100 << 20
	e := newFileEnv(t, cfg)
	key, ws := e.standardKey(t, "uploader")
	before := e.state(t)

	sizes := []int{33 << 20, 1 << 20, 32 << 20, 1000}
	total := 0
	for _, n := range sizes {
		total += n
	}
	data := filePDF(total)
	id := e.createUpload(t, key, "recording.pdf", "application/pdf", total)
	ids := make([]string, len(sizes))
	off := 0
	for i, n := range sizes {
		status, m, raw := e.sendPart(t, key, id, data[off:off+n])
		if status != http.StatusOK {
			t.Fatalf("part %d = %d %s", i, status, raw)
		}
		ids[i], _ = m["id"].(string)
		off += n
	}
	sum := md5.Sum(data)
	status, m, raw := e.uploadJSON(t, key, uploadsPath+"/"+id+"/complete",
		fmt.Sprintf(`{"part_ids":%s,"md5":%q}`, partIDs(ids), hex.EncodeToString(sum[:])))
	if status != http.StatusOK || m["status"] != "completed" {
		t.Fatalf("complete = %d %s", status, raw)
	}
	fileID, _ := m["file"].(map[string]any)["id"].(string)
	object := filepath.Join(cfg.Storage.FS.Dir, filepath.FromSlash(files.ObjectKey(ws, fileID)))
	if info, err := os.Lstat(object); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the file's object is not a composed object: %v, %v", info, err)
	}
	e.wantStored(t, ws, fileID, "recording.pdf", "application/pdf", data)

	resp, content := e.g.do(t, "GET", "/api/v1/files/"+fileID+"/content", key, nil, nil)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(content, data) {
		t.Fatalf("content = %d, %d bytes; want 200 and the %d bytes sent", resp.StatusCode, len(content), total)
	}
	seam := 0
	for _, n := range sizes[:len(sizes)-1] {
		seam += n
		rng := fmt.Sprintf("bytes=%d-%d", seam-3, seam+2)
		resp, content := e.g.do(t, "GET", "/api/v1/files/"+fileID+"/content", key, nil, http.Header{"Range": {rng}})
		if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(content, data[seam-3:seam+3]) {
			t.Errorf("range %s across a seam = %d %q", rng, resp.StatusCode, content)
		}
	}
	for _, p := range e.residue() {
		t.Errorf("left behind: %s", p)
	}

	resp, _ = e.g.do(t, "DELETE", "/api/v1/files/"+fileID, key, nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("delete = %d", resp.StatusCode)
	}
	segments, err := os.ReadDir(filepath.Join(cfg.Storage.FS.Dir, ".composed"))
	if err != nil || len(segments) != 0 {
		t.Errorf("after the delete .composed holds %d entries (%v), want none", len(segments), err)
	}
	e.assertNothingLeft(t, before)
}
