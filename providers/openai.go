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
// DELETE {base}/files/{id}; GET {base}/files/{id}/content. Authenticated
// with "Authorization: Bearer"; request ids come in x-request-id.
var openAIDialect = dialect{
	name:            ProviderOpenAI,
	baseURL:         "https://api.openai.com/v1",
	filesPath:       "/files",
	fields:          [][2]string{{"purpose", OpenAIPurpose}},
	keyHeader:       "Authorization",
	keyPrefix:       "Bearer ",
	requestIDHeader: "x-request-id",
	decodeUpload:    decodeOpenAIFile,
	decodeError:     decodeOpenAIError,
	listQuery:       openAIListQuery,
	decodeList:      decodeOpenAIList,
	decodeInfo:      decodeOpenAIInfo,
	checkDeleted:    checkOpenAIDeleted,
}

// NewOpenAI returns a client of OpenAI's Files API. opts.BaseURL includes
// the /v1 prefix (https://api.openai.com/v1).
func NewOpenAI(opts Options, log *zap.Logger) (*Client, error) {
	return newClient(&openAIDialect, opts, log)
}

// openAIFile is OpenAI's File object; other fields are ignored.
type openAIFile struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	Bytes     *int64 `json:"bytes"`
	CreatedAt int64  `json:"created_at"` // Unix seconds
	Filename  string `json:"filename"`
	Purpose   string `json:"purpose"`
}

// openAIUndownloadable are the purposes whose content OpenAI's API refuses
// to serve.
var openAIUndownloadable = []string{"assistants", OpenAIPurpose}

func (f openAIFile) info() (files.ProviderFileInfo, error) {
	if f.ID == "" || f.Object != "file" {
		return files.ProviderFileInfo{}, errors.New("not a file object")
	}
	var size int64
	if f.Bytes != nil {
		size = *f.Bytes
	}
	return files.ProviderFileInfo{
		ID:           f.ID,
		Filename:     f.Filename,
		Size:         size,
		CreatedAt:    time.Unix(f.CreatedAt, 0).UTC(),
		Purpose:      f.Purpose,
		Downloadable: !slices.Contains(openAIUndownloadable, f.Purpose),
	}, nil
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

// decodeOpenAIList reads {"object":"list","data":[File…],"has_more",…}.
func decodeOpenAIList(body []byte) (files.ProviderPage, error) {
	var l struct {
		Object  string        `json:"object"`
		Data    *[]openAIFile `json:"data"`
		HasMore *bool         `json:"has_more"`
	}
	if err := json.Unmarshal(body, &l); err != nil {
		return files.ProviderPage{}, fmt.Errorf("decoding file list: %w", err)
	}
	if l.Object != "list" || l.Data == nil || l.HasMore == nil {
		return files.ProviderPage{}, errors.New("answer is not a file list")
	}
	return pageOf(*l.Data, *l.HasMore)
}

func decodeOpenAIInfo(body []byte) (files.ProviderFileInfo, error) {
	var f openAIFile
	if err := json.Unmarshal(body, &f); err != nil {
		return files.ProviderFileInfo{}, fmt.Errorf("decoding file object: %w", err)
	}
	return f.info()
}

func decodeOpenAIFile(body []byte) (Uploaded, error) {
	var f openAIFile
	if err := json.Unmarshal(body, &f); err != nil {
		return Uploaded{}, fmt.Errorf("decoding file object: %w", err)
	}
	if f.ID == "" || f.Object != "file" || f.Bytes == nil {
		return Uploaded{}, errors.New("answer is not a file object")
	}
	return Uploaded{ID: f.ID, Bytes: *f.Bytes, CreatedAt: time.Unix(f.CreatedAt, 0).UTC()}, nil
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
