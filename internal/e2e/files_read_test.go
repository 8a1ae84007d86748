package e2e

// The read side of files against real servers: list, metadata, delete and
// download on SQLite and PostgreSQL and on fs, S3 and GCS; concurrent
// deletes; the quota given back exactly; service keys.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/files/blob"
)

// readCases crosses the storage backends with the metadata stores.
func readCases() []fileStorage {
	var out []fileStorage
	for _, sc := range storageCases() {
		for _, mc := range metadataStores() {
			out = append(out, fileStorage{sc.name + "-" + mc.name, func(t *testing.T, c *configs.Config) {
				sc.configure(t, c)
				mc.configure(t, c)
			}})
		}
	}
	return out
}

type listAnswer struct {
	Shape   string            `json:"_shape"`
	Object  string            `json:"object"`
	Data    []json.RawMessage `json:"data"`
	HasMore bool              `json:"has_more"`
	FirstID *string           `json:"first_id"`
	LastID  *string           `json:"last_id"`
	Cursor  *string           `json:"cursor"`
}

func (l listAnswer) ids(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, raw := range l.Data {
		var f struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatal(err)
		}
		out = append(out, f.ID)
	}
	return out
}

func (e *fileEnv) list(t *testing.T, key, query string, header http.Header) listAnswer {
	t.Helper()
	resp, body := e.g.do(t, "GET", "/api/v1/files?"+query, key, nil, header)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /files?%s = %d %s", query, resp.StatusCode, body)
	}
	var l listAnswer
	if err := json.Unmarshal(body, &l); err != nil {
		t.Fatalf("list answer %s: %v", body, err)
	}
	return l
}

func TestFileReadRoutes(t *testing.T) {
	for _, sc := range readCases() {
		t.Run(sc.name, func(t *testing.T) {
			cfg := fileTestConfig(t)
			sc.configure(t, &cfg)
			cfg.Files.Downloadable = true
			e := newFileEnv(t, cfg)
			testFileReads(t, e)
		})
	}
}

func testFileReads(t *testing.T, e *fileEnv) {
	ctx := context.Background()
	key, ws := e.standardKey(t, "alice")
	mgmt := e.g.newKey(t, "alice", "--management")
	service := e.g.newKey(t, "alice", "--service")
	bob, _ := e.standardKey(t, "bob")
	var ids []string // oldest first
	contents := map[string][]byte{}
	for i := range 5 {
		data := fileText(1000 + i)
		resp, body := e.upload(t, key, "", nil, fmt.Sprintf("dir/notes %d é.txt", i), data)
		id := fileWantUploaded(t, resp, body, "service", fmt.Sprintf("dir/notes %d é.txt", i), data, "text/plain")
		// The upload's answer says downloadable as GET of the file does.
		if got := fileJSON(t, body)["downloadable"]; got != e.g.Config.Files.Downloadable {
			t.Errorf("upload answer says downloadable %v under files.downloadable %v", got, e.g.Config.Files.Downloadable)
		}
		ids = append(ids, id)
		contents[id] = data
	}
	newest := slices.Clone(ids)
	slices.Reverse(newest)

	t.Run("list walks every page once, newest first", func(t *testing.T) {
		var got []string
		query := "limit=2"
		for range 5 {
			l := e.list(t, key, query, nil)
			got = append(got, l.ids(t)...)
			if l.Shape != "service" || (l.Cursor == nil) == l.HasMore {
				t.Fatalf("page %+v", l)
			}
			if l.Cursor == nil {
				break
			}
			query = "limit=2&cursor=" + *l.Cursor
		}
		if !slices.Equal(got, newest) {
			t.Errorf("walk = %v, want %v", got, newest)
		}
		// OpenAI's after= and Anthropic's after_id= and before_id=.
		oa := e.list(t, key, "limit=2&order=asc&after="+ids[1], http.Header{"User-Agent": {"OpenAI/JS 5.0"}})
		if got := oa.ids(t); oa.Object != "list" || oa.Shape != "openai" || !slices.Equal(got, ids[2:4]) || !oa.HasMore {
			t.Errorf("openai after = %+v %v", oa, got)
		}
		an := e.list(t, key, "limit=10&after_id="+newest[2], http.Header{"anthropic-version": {"2023-06-01"}})
		if got := an.ids(t); an.Shape != "anthropic" || !slices.Equal(got, newest[3:]) || an.HasMore || *an.FirstID != newest[3] {
			t.Errorf("anthropic after_id = %+v %v", an, got)
		}
		back := e.list(t, key, "limit=2&before_id="+newest[3], nil)
		if got := back.ids(t); !slices.Equal(got, newest[1:3]) || !back.HasMore {
			t.Errorf("before_id = %v, has_more %v; want %v", got, back.HasMore, newest[1:3])
		}
		// The management and service keys see the same workspace; bob sees none of it.
		for name, k := range map[string]string{"management": mgmt, "service": service} {
			if got := e.list(t, k, "workspace_id="+ws, nil).ids(t); !slices.Equal(got, newest) {
				t.Errorf("%s key list = %v", name, got)
			}
		}
		if got := e.list(t, bob, "", nil).ids(t); len(got) != 0 {
			t.Errorf("bob lists %v", got)
		}
	})

	t.Run("bad parameters name themselves", func(t *testing.T) {
		first := e.list(t, key, "limit=1", nil)
		tampered := []byte(*first.Cursor)
		tampered[len(tampered)-3] ^= 1
		for query, param := range map[string]string{
			"limit=0": "limit", "limit=abc": "limit", "order=sideways": "order", "cursor=" + string(tampered): "cursor",
			"after=%00": "after",
		} {
			resp, body := e.g.do(t, "GET", "/api/v1/files?"+query, key, nil, nil)
			md := fileWantEnvelope(t, body, http.StatusBadRequest, "Invalid request parameters")
			if resp.StatusCode != 400 || !fileMetaNames(md, param) {
				t.Errorf("%s = %d %s, want 400 naming %s", query, resp.StatusCode, body, param)
			}
		}
		// A cursor of alice's workspace is refused in bob's listing.
		resp, body := e.g.do(t, "GET", "/api/v1/files?cursor="+*first.Cursor, bob, nil, nil)
		if resp.StatusCode != 400 {
			t.Errorf("alice's cursor with bob's key = %d %s", resp.StatusCode, body)
		}
		resp, body = e.g.do(t, "GET", "/api/v1/files/bad%20id", key, nil, nil)
		if md := fileWantEnvelope(t, body, 400, "Invalid request parameters"); resp.StatusCode != 400 || !fileMetaNames(md, "file_id") {
			t.Errorf("malformed id = %d %s", resp.StatusCode, body)
		}
	})

	t.Run("metadata, and 404 that reveals nothing", func(t *testing.T) {
		resp, body := e.g.do(t, "GET", "/api/v1/files/"+ids[0], key, nil, nil)
		if resp.StatusCode != 200 || fileJSON(t, body)["id"] != ids[0] || fileJSON(t, body)["downloadable"] != true {
			t.Errorf("GET = %d %s", resp.StatusCode, body)
		}
		_, other := e.g.do(t, "GET", "/api/v1/files/"+ids[0], bob, nil, nil)
		_, unknown := e.g.do(t, "GET", "/api/v1/files/file-doesnotexist", bob, nil, nil)
		fileWantEnvelope(t, other, 404, "Resource not found")
		if !bytes.Equal(other, unknown) {
			t.Errorf("another user's file answers %s, an unknown id %s", other, unknown)
		}
	})

	t.Run("download", func(t *testing.T) {
		id := ids[2]
		data := contents[id]
		resp, body := e.g.do(t, "GET", "/api/v1/files/"+id+"/content", key, nil, nil)
		etag := `"` + id + `"`
		if resp.StatusCode != 200 || !bytes.Equal(body, data) || resp.Header.Get("ETag") != etag ||
			resp.Header.Get("Content-Type") != "text/plain" || resp.ContentLength != int64(len(data)) ||
			resp.Header.Get("Content-Disposition") != `attachment; filename*=utf-8''notes%202%20%C3%A9.txt` {
			t.Errorf("download = %d, %d bytes, headers %v", resp.StatusCode, len(body), resp.Header)
		}
		resp, body = e.g.do(t, "GET", "/api/v1/files/"+id+"/content", service, nil, http.Header{"Range": {"bytes=100-199"}})
		if resp.StatusCode != 206 || !bytes.Equal(body, data[100:200]) || resp.Header.Get("Content-Range") != fmt.Sprintf("bytes 100-199/%d", len(data)) {
			t.Errorf("range = %d %q %v", resp.StatusCode, body, resp.Header)
		}
		resp, _ = e.g.do(t, "GET", "/api/v1/files/"+id+"/content", key, nil, http.Header{"Range": {"bytes=-10"}})
		if resp.StatusCode != 206 {
			t.Errorf("suffix range = %d", resp.StatusCode)
		}
		resp, _ = e.g.do(t, "GET", "/api/v1/files/"+id+"/content", key, nil, http.Header{"Range": {fmt.Sprintf("bytes=%d-", len(data))}})
		if resp.StatusCode != 416 || resp.Header.Get("Content-Range") != fmt.Sprintf("bytes */%d", len(data)) {
			t.Errorf("unsatisfiable = %d %v", resp.StatusCode, resp.Header)
		}
		resp, body = e.g.do(t, "GET", "/api/v1/files/"+id+"/content", key, nil, http.Header{"If-None-Match": {etag}})
		if resp.StatusCode != 304 || len(body) != 0 {
			t.Errorf("If-None-Match = %d %q", resp.StatusCode, body)
		}
		resp, _ = e.g.do(t, "GET", "/api/v1/files/"+id+"/content", bob, nil, nil)
		if resp.StatusCode != 404 {
			t.Errorf("bob's download = %d", resp.StatusCode)
		}
	})

	t.Run("delete gives the bytes back, once", func(t *testing.T) {
		var stored int64
		for _, d := range contents {
			stored += int64(len(d))
		}
		wantStored := func(want int64) {
			t.Helper()
			n, err := e.store.StoredBytes(ctx, ws)
			if err != nil || n != want {
				t.Errorf("stored bytes = %d, %v; want %d", n, err, want)
			}
		}
		wantStored(stored)
		resp, body := e.g.do(t, "DELETE", "/api/v1/files/"+ids[0], service, nil, nil)
		if resp.StatusCode != 403 {
			t.Errorf("service key delete = %d %s", resp.StatusCode, body)
		}
		resp, body = e.g.do(t, "DELETE", "/api/v1/files/"+ids[0], bob, nil, nil)
		if resp.StatusCode != 404 {
			t.Errorf("bob's delete = %d %s", resp.StatusCode, body)
		}
		objKey := e.record(t, ws, ids[0]).ObjectKey
		resp, body = e.g.do(t, "DELETE", "/api/v1/files/"+ids[0], key, nil, http.Header{"User-Agent": {"OpenAI/JS 5"}})
		if resp.StatusCode != 200 || string(body) != `{"_shape":"openai","id":"`+ids[0]+`","object":"file","deleted":true}` {
			t.Errorf("delete = %d %s", resp.StatusCode, body)
		}
		stored -= int64(len(contents[ids[0]]))
		wantStored(stored)
		if _, err := e.bucket.Stat(ctx, objKey); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("object after delete: %v, want ErrNotFound", err)
		}
		resp, _ = e.g.do(t, "DELETE", "/api/v1/files/"+ids[0], key, nil, nil)
		if resp.StatusCode != 404 {
			t.Errorf("second delete = %d", resp.StatusCode)
		}
		resp, _ = e.g.do(t, "GET", "/api/v1/files/"+ids[0]+"/content", key, nil, nil)
		if resp.StatusCode != 404 {
			t.Errorf("download after delete = %d", resp.StatusCode)
		}

		// Two concurrent deletes: one 200, one 404; the quota moves once.
		for _, id := range ids[1:3] {
			codes := make([]int, 2)
			var wg sync.WaitGroup
			for i := range codes {
				wg.Go(func() {
					resp, _ := e.g.do(t, "DELETE", "/api/v1/files/"+id, mgmt, nil, nil)
					codes[i] = resp.StatusCode
				})
			}
			wg.Wait()
			slices.Sort(codes)
			if !slices.Equal(codes, []int{200, 404}) {
				t.Errorf("concurrent deletes = %v, want [200 404]", codes)
			}
			stored -= int64(len(contents[id]))
			wantStored(stored)
		}
		if got := e.list(t, key, "", nil).ids(t); !slices.Equal(got, newest[:2]) {
			t.Errorf("left after deletes = %v, want %v", got, newest[:2])
		}
	})
}

// TestFileContentNotDownloadable: by default uploads cannot be read back,
// except by service keys.
func TestFileContentNotDownloadable(t *testing.T) {
	cfg := fileTestConfig(t)
	e := newFileEnv(t, cfg)
	key, _ := e.standardKey(t, "alice")
	service := e.g.newKey(t, "alice", "--service")
	data := fileText(500)
	resp, body := e.upload(t, key, "", nil, "a.txt", data)
	id := fileWantUploaded(t, resp, body, "service", "a.txt", data, "text/plain")
	if fileJSON(t, body)["downloadable"] != false {
		t.Errorf("upload answer says downloadable: %s", body)
	}
	resp, body = e.g.do(t, "GET", "/api/v1/files/"+id+"/content", key, nil, nil)
	fileWantEnvelope(t, body, 400, "File is not downloadable")
	if resp.StatusCode != 400 {
		t.Errorf("download = %d", resp.StatusCode)
	}
	resp, body = e.g.do(t, "GET", "/api/v1/files/"+id+"/content", service, nil, nil)
	if resp.StatusCode != 200 || !bytes.Equal(body, data) {
		t.Errorf("service key download = %d, %d bytes", resp.StatusCode, len(body))
	}
	// A service key only reads: uploads and workspaces are refused.
	resp, _ = e.upload(t, service, "", nil, "b.txt", data)
	if resp.StatusCode != 403 {
		t.Errorf("service key upload = %d", resp.StatusCode)
	}
	resp, _ = e.g.do(t, "GET", "/api/v1/workspaces", service, nil, nil)
	if resp.StatusCode != 403 {
		t.Errorf("service key workspaces = %d", resp.StatusCode)
	}
	resp, _ = e.g.do(t, "GET", "/api/v1/models", service, nil, nil)
	if resp.StatusCode != 200 {
		t.Errorf("service key models = %d", resp.StatusCode)
	}
}
