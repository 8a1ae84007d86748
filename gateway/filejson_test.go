package gateway

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/files"
)

// listShape is the reference of appendFileList: a page dressed in s as
// encoding/json writes it. The route wrote its answers this way before they
// were written by hand, and the two must agree byte for byte.
func listShape(s shape, page files.Page) any {
	out := fileList{Shape: s, Data: make([]any, len(page.Files)), HasMore: page.HasMore}
	for i, f := range page.Files {
		out.Data[i] = fileShape(s, f.Record, f.Downloadable)
	}
	if n := len(page.Files); n > 0 {
		out.FirstID, out.LastID = &page.Files[0].ID, &page.Files[n-1].ID
	}
	switch s {
	case shapeOpenAI:
		out.Object = "list"
	case shapeService:
		// The service shape's cursor: always present, null on the last page.
		return struct {
			fileList
			Cursor *string `json:"cursor"`
		}{out, nullable(page.Cursor)}
	case shapeAnthropic:
		// The same cursor under the name the Anthropic SDKs page with.
		return struct {
			fileList
			NextPage *string `json:"next_page"`
		}{out, nullable(page.Cursor)}
	}
	return out
}

// fileList is a page in every shape; fields a shape does not have are left
// out.
type fileList struct {
	Shape   shape   `json:"_shape"`
	Object  string  `json:"object,omitempty"`
	Data    []any   `json:"data"`
	HasMore bool    `json:"has_more"`
	FirstID *string `json:"first_id"`
	LastID  *string `json:"last_id"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

var allShapes = []shape{shapeService, shapeOpenAI, shapeAnthropic}

// wantFileList checks appendFileList against the reference.
func wantFileList(t *testing.T, s shape, page files.Page) {
	t.Helper()
	want, err := json.Marshal(listShape(s, page))
	if err != nil {
		t.Fatal(err)
	}
	if got := appendFileList(nil, s, page); string(got) != string(want) {
		t.Errorf("%s:\ngot  %s\nwant %s", s, got, want)
	}
}

func TestFileListJSON(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.FixedZone("x", 3600))
	odd := []string{
		"", "plain.txt", `quote " and \ backslash`, "<script>&</script>", "tab\tnew\nline\rcr\bbs\fff",
		"\x00\x01\x1f\x7f", "é ü 漢字 😀", "bad \xff utf-8 \xc3", "line\u2028para\u2029", "\ufffd literal",
	}
	var recs []files.File
	for i, s := range odd {
		recs = append(recs, files.File{Record: files.Record{
			ID: "file-" + s, Filename: s, MimeType: s, Size: int64(i) * 1000, Purpose: files.Purpose(s),
			CreatedAt: at.Add(time.Duration(i) * 1234567 * time.Nanosecond),
		}, Downloadable: i%2 == 0})
	}
	recs = append(recs,
		files.File{Record: files.Record{ID: "file-zero", CreatedAt: time.Time{}}},
		files.File{Record: files.Record{ID: "file-far", Size: -1, CreatedAt: time.Date(12345, 6, 7, 8, 9, 10, 0, time.UTC)}},
		files.File{Record: files.Record{ID: "file-bc", CreatedAt: time.Date(-42, 1, 1, 0, 0, 0, 1, time.UTC)}},
		files.File{Record: files.Record{ID: "file-vision", Purpose: files.PurposeVision, CreatedAt: at}},
	)
	pages := map[string]files.Page{
		"empty":          {Files: []files.File{}},
		"nil files":      {},
		"one":            {Files: recs[:1]},
		"all, has more":  {Files: recs, HasMore: true, Cursor: "c<ur>&sor"},
		"last page":      {Files: recs[1:3]},
		"cursor, 1 file": {Files: recs[2:3], Cursor: "next"},
	}
	for name, page := range pages {
		t.Run(name, func(t *testing.T) {
			for _, s := range allShapes {
				wantFileList(t, s, page)
			}
		})
	}
}

func TestAppendFileListAppends(t *testing.T) {
	page := files.Page{Files: []files.File{{Record: files.Record{ID: "file-a", CreatedAt: time.Unix(1, 0)}}}}
	got := appendFileList([]byte("prefix:"), shapeService, page)
	if !strings.HasPrefix(string(got), `prefix:{"_shape":"service"`) {
		t.Errorf("got %s", got)
	}
}

// FuzzFileListJSON: on any file, appendFileList writes what encoding/json
// writes for listShape, in every shape.
func FuzzFileListJSON(f *testing.F) {
	f.Add("file-abc", "notes.txt", "text/plain", "user_data", int64(12), int64(1767319445123456789), true, "", true)
	f.Add("file-\u2028", "<a&b>\x00\xff", "", "", int64(-1), int64(-62135596800000000000/1e3), false, "cur\"sor", false)
	f.Fuzz(func(t *testing.T, id, filename, mime, purpose string, size, unixNano int64, downloadable bool, cursor string, more bool) {
		rec := files.Record{ID: id, Filename: filename, MimeType: mime, Purpose: files.Purpose(purpose), Size: size,
			CreatedAt: time.Unix(0, unixNano)}
		page := files.Page{Files: []files.File{{Record: rec, Downloadable: downloadable}, {Record: rec}}, HasMore: more, Cursor: cursor}
		for _, s := range allShapes {
			wantFileList(t, s, page)
		}
	})
}
