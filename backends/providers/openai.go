package providers

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/aigateway/gateway/files"
	"go.uber.org/zap"
)

// OpenAIPurpose is the purpose field of uploads: files given as input to
// models.
const OpenAIPurpose = "user_data"

// openAIDialect is OpenAI's Files API: POST {base}/files, multipart with the
// fields purpose and file; GET {base}/files?limit=&order=&after=; GET and
// DELETE {base}/files/{id}; GET {base}/files/{id}/content; and the Uploads
// resource (uploads.go): POST {base}/uploads, {base}/uploads/{id}/parts,
// …/complete and …/cancel. Authenticated with "Authorization: Bearer"; request ids come in x-request-id.
var openAIDialect = dialect{
	name:            ProviderOpenAI,
	baseURL:         "https://api.openai.com/v1",
	filesPath:       "/files",
	fields:          [][2]string{{"purpose", OpenAIPurpose}},
	keyHeader:       "Authorization",
	keyPrefix:       "Bearer ",
	requestIDHeader: "x-request-id",
	decodeUpload:    openAIRecords.upload,
	decodeError:     decodeOpenAIError,
	listQuery:       openAIListQuery,
	decodeList:      openAIRecords.list,
	decodeInfo:      openAIRecords.info,
	checkDeleted:    checkOpenAIDeleted,
	uploads:         true,
}

// openAIRecords reads OpenAI's answers made of File objects: one, or a list
// of them, {"object":"list","data":[File…],"has_more",…}.
var openAIRecords = records[openAIFile, *openAIFile]{noun: "file object", listObject: "list"}

// NewOpenAI returns a client of OpenAI's Files API. opts.BaseURL includes
// the /v1 prefix (https://api.openai.com/v1).
func NewOpenAI(opts Options, log *zap.Logger) (*Client, error) {
	return newClient(&openAIDialect, opts, log)
}

// openAIFile is OpenAI's File object; other members are ignored.
type openAIFile struct {
	ID        string
	Object    string
	Bytes     int64
	HasBytes  bool  // bytes is there, and not null
	CreatedAt int64 // Unix seconds
	Filename  string
	Purpose   string
}

var openAIFileNames = []string{"id", "object", "bytes", "created_at", "filename", "purpose"}

// read reads a File object into f.
func (f *openAIFile) read(r *jsonReader) error {
	return members(r, f, openAIFileNames, (*openAIFile).member)
}

// member reads the member key; openAIFileNames are the names it reads.
func (f *openAIFile) member(r *jsonReader, key string) (known bool, err error) {
	switch key {
	case "id":
		return true, r.setString(&f.ID)
	case "object":
		return true, r.setString(&f.Object)
	case "bytes":
		return true, r.setInt64(&f.Bytes, &f.HasBytes)
	case "created_at":
		return true, r.setInt64(&f.CreatedAt, nil)
	case "filename":
		return true, r.setString(&f.Filename)
	case "purpose":
		return true, r.setString(&f.Purpose)
	case "status", "status_details", "expires_at":
		// In every File object, and not needed.
		return true, r.skip()
	}
	return false, nil
}

// openAIUndownloadable are the purposes whose content OpenAI's API refuses
// to serve.
var openAIUndownloadable = []string{"assistants", OpenAIPurpose}

func (f *openAIFile) info() (files.ProviderFileInfo, error) {
	if f.ID == "" || f.Object != "file" {
		return files.ProviderFileInfo{}, errors.New("not a file object")
	}
	return files.ProviderFileInfo{
		ID:           f.ID,
		Filename:     f.Filename,
		Size:         f.Bytes, // 0 when absent
		CreatedAt:    time.Unix(f.CreatedAt, 0).UTC(),
		Purpose:      f.Purpose,
		Downloadable: !slices.Contains(openAIUndownloadable, f.Purpose),
	}, nil
}

// uploaded is the File object an upload answers with.
func (f *openAIFile) uploaded() (Uploaded, error) {
	if f.ID == "" || f.Object != "file" || !f.HasBytes {
		return Uploaded{}, errors.New("answer is not a file object")
	}
	return Uploaded{ID: f.ID, Bytes: f.Bytes, CreatedAt: time.Unix(f.CreatedAt, 0).UTC()}, nil
}

// openAIListQuery asks for limit files after AfterID in the order asked.
// OpenAI has no before: the files before BeforeID are those after it in
// the opposite order, nearest first, so the page comes back reversed. The
// query is written as url.Values.Encode would, without building one.
func openAIListQuery(q files.ProviderListQuery) (string, bool, error) {
	after, ascending, reversed := q.AfterID, q.Ascending, false
	if after == "" && q.BeforeID != "" {
		after, ascending, reversed = q.BeforeID, !ascending, true
	}
	order := "desc"
	if ascending {
		order = "asc"
	}
	query := "limit=" + strconv.Itoa(listLimit(q)) + "&order=" + order
	if after != "" {
		query = "after=" + url.QueryEscape(after) + "&" + query
	}
	return query, reversed, nil
}

// decodeOpenAIError reads {"error":{"message","type","param","code"}}.
func decodeOpenAIError(body []byte) (typ, message, requestID string) {
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"` // a string, a number or null
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return "", "", ""
	}
	typ = e.Error.Type
	if code, ok := e.Error.Code.(string); ok && typ == "" {
		typ = code
	}
	return typ, e.Error.Message, ""
}

// checkOpenAIDeleted reads {"id","object":"file","deleted":true}.
func checkOpenAIDeleted(body []byte, id string) error {
	var d struct {
		ID      string `json:"id"`
		Deleted bool   `json:"deleted"`
	}
	if err := json.Unmarshal(body, &d); err != nil {
		return fmt.Errorf("decoding delete answer: %w", err)
	}
	if d.ID != id || !d.Deleted {
		return errors.New("answer does not say the file was deleted")
	}
	return nil
}
