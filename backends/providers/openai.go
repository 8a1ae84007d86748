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
	return members(r, f, (*openAIFile).member)
}

func (f *openAIFile) member(r *jsonReader, key string) error {
	switch key {
	case "id":
		return r.setString(&f.ID)
	case "object":
		return r.setString(&f.Object)
	case "bytes":
		return r.setInt64(&f.Bytes, &f.HasBytes)
	case "created_at":
		return r.setInt64(&f.CreatedAt, nil)
	case "filename":
		return r.setString(&f.Filename)
	case "purpose":
		return r.setString(&f.Purpose)
	case "status", "status_details", "expires_at":
		// In every File object, and not needed.
		return r.skip()
	}
	// A key that is no name exactly may still be one but for case (openAIFileNames
	// are the names of the cases above).
	if name := foldedName(key, openAIFileNames); name != "" {
		return f.member(r, name)
	}
	return r.skip()
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

// openAIList is a page of OpenAI's file list.
type openAIList struct {
	object              string
	data                *[]openAIFile
	hasData             bool // data is there, and not null
	hasMore, hasMoreSet bool
}

var (
	openAIListNames   = []string{"object", "data", "has_more"}
	openAIListRecords recordPool[openAIFile]
)

func (l *openAIList) read(r *jsonReader) error {
	return members(r, l, (*openAIList).member)
}

func (l *openAIList) member(r *jsonReader, key string) (err error) {
	switch key {
	case "object":
		return r.setString(&l.object)
	case "data":
		l.hasData, err = elements(r, l.data, (*openAIFile).read)
		return err
	case "has_more":
		return r.setBool(&l.hasMore, &l.hasMoreSet)
	case "first_id", "last_id":
		return r.skip()
	}
	// A key that is no name exactly may still be one but for case (openAIListNames
	// are the names of the cases above).
	if name := foldedName(key, openAIListNames); name != "" {
		return l.member(r, name)
	}
	return r.skip()
}

// decodeOpenAIList reads {"object":"list","data":[File…],"has_more",…}.
func decodeOpenAIList(body []byte) (files.ProviderPage, error) {
	l := openAIList{data: openAIListRecords.get()}
	defer openAIListRecords.put(l.data)
	r := newJSONReader(body)
	err := l.read(r)
	if err == nil {
		err = r.end()
	}
	if err != nil {
		return files.ProviderPage{}, fmt.Errorf("decoding file list: %w", err)
	}
	if l.object != "list" || !l.hasData || !l.hasMoreSet {
		return files.ProviderPage{}, errors.New("answer is not a file list")
	}
	return pageOf(*l.data, l.hasMore)
}

// decodeOpenAIFileObject reads one File object.
func decodeOpenAIFileObject(body []byte) (openAIFile, error) {
	var f openAIFile
	r := newJSONReader(body)
	err := f.read(r)
	if err == nil {
		err = r.end()
	}
	if err != nil {
		return openAIFile{}, fmt.Errorf("decoding file object: %w", err)
	}
	return f, nil
}

func decodeOpenAIInfo(body []byte) (files.ProviderFileInfo, error) {
	f, err := decodeOpenAIFileObject(body)
	if err != nil {
		return files.ProviderFileInfo{}, err
	}
	return f.info()
}

func decodeOpenAIFile(body []byte) (Uploaded, error) {
	f, err := decodeOpenAIFileObject(body)
	if err != nil {
		return Uploaded{}, err
	}
	if f.ID == "" || f.Object != "file" || !f.HasBytes {
		return Uploaded{}, errors.New("answer is not a file object")
	}
	return Uploaded{ID: f.ID, Bytes: f.Bytes, CreatedAt: time.Unix(f.CreatedAt, 0).UTC()}, nil
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
