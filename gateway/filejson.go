package gateway

import (
	"cmp"
	"strconv"
	"sync"
	"time"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/internal/jsonobj"
)

// A page of files is written by hand: encoding/json's reflection over the
// shapes of fileShape cost as much as the rest of the route's own work on a
// provider passthrough. The bytes are exactly what json.Marshal writes for
// the shapes (the reference, listShape, is kept beside the tests, which
// compare the two on every shape and on any file a fuzzer makes).

// appendFileList appends page, dressed in s, as a JSON object.
func appendFileList(b []byte, s shape, page files.Page) []byte {
	b = append(b, `{"_shape":`...)
	b = jsonobj.AppendString(b, string(s))
	if s == shapeOpenAI {
		b = append(b, `,"object":"list"`...)
	}
	b = append(b, `,"data":[`...)
	for i, f := range page.Files {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendFile(b, s, f.Record, f.Downloadable)
	}
	b = append(b, `],"has_more":`...)
	b = strconv.AppendBool(b, page.HasMore)
	first, last := "", ""
	if n := len(page.Files); n > 0 {
		first, last = page.Files[0].ID, page.Files[n-1].ID
	}
	b = append(b, `,"first_id":`...)
	b = appendNullable(b, first, len(page.Files) > 0)
	b = append(b, `,"last_id":`...)
	b = appendNullable(b, last, len(page.Files) > 0)
	switch s {
	case shapeService:
		b = append(b, `,"cursor":`...)
		b = appendNullable(b, page.Cursor, page.Cursor != "")
	case shapeAnthropic:
		b = append(b, `,"next_page":`...)
		b = appendNullable(b, page.Cursor, page.Cursor != "")
	}
	return append(b, '}')
}

// appendFile appends rec dressed in s, as fileShape dresses it.
func appendFile(b []byte, s shape, rec files.Record, downloadable bool) []byte {
	b = append(b, `{"_shape":`...)
	b = jsonobj.AppendString(b, string(s))
	b = append(b, `,"id":`...)
	b = jsonobj.AppendString(b, rec.ID)
	if s == shapeOpenAI {
		b = append(b, `,"object":"file","bytes":`...)
		b = strconv.AppendInt(b, rec.Size, 10)
		b = append(b, `,"created_at":`...)
		b = strconv.AppendInt(b, rec.CreatedAt.Unix(), 10)
		b = append(b, `,"filename":`...)
		b = jsonobj.AppendString(b, rec.Filename)
		b = append(b, `,"purpose":`...)
		b = jsonobj.AppendString(b, string(cmp.Or(rec.Purpose, files.DefaultPurpose)))
		return append(b, `,"status":"processed"}`...)
	}
	b = append(b, `,"type":"file","filename":`...)
	b = jsonobj.AppendString(b, rec.Filename)
	b = append(b, `,"mime_type":`...)
	b = jsonobj.AppendString(b, rec.MimeType)
	b = append(b, `,"size_bytes":`...)
	b = strconv.AppendInt(b, rec.Size, 10)
	b = append(b, `,"downloadable":`...)
	b = strconv.AppendBool(b, downloadable)
	// RFC 3339 is digits, '-', ':', '.', 'T' and 'Z' (also for a year past
	// 9999 or before 0): nothing to escape.
	b = append(b, `,"created_at":"`...)
	b = rec.CreatedAt.UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, `"}`...)
}

// appendNullable appends s as a JSON string when ok, else null.
func appendNullable(b []byte, s string, ok bool) []byte {
	if !ok {
		return append(b, "null"...)
	}
	return jsonobj.AppendString(b, s)
}

// listBuffers hold encoded pages until they are written.
var listBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledList is the largest buffer kept for another page: a page of a
// thousand files is left to the garbage collector rather than held.
const maxPooledList = 256 << 10
