package providers

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/aigateway/gateway/files"
	"go.uber.org/zap"
)

// Anthropic protocol headers of the Files API (a beta).
const (
	AnthropicVersion   = "2023-06-01"
	AnthropicFilesBeta = "files-api-2025-04-14"
)

// anthropicDialect is Anthropic's Files API (a beta): POST {base}/v1/files,
// multipart with one part file; GET {base}/v1/files?limit=&after_id=&before_id=
// (newest first, the only order it offers); GET and DELETE
// {base}/v1/files/{id}; GET {base}/v1/files/{id}/content. Authenticated with
// x-api-key plus the anthropic-version and anthropic-beta headers; request
// ids come in request-id.
var anthropicDialect = dialect{
	name:      ProviderAnthropic,
	baseURL:   "https://api.anthropic.com",
	filesPath: "/v1/files",
	keyHeader: "x-api-key",
	versionHeaders: [][2]string{
		{"anthropic-version", AnthropicVersion},
		{"anthropic-beta", AnthropicFilesBeta},
	},
	requestIDHeader: "request-id",
	decodeUpload:    anthropicRecords.upload,
	decodeError:     decodeAnthropicError,
	listQuery:       anthropicListQuery,
	decodeList:      anthropicRecords.list,
	decodeInfo:      anthropicRecords.info,
	checkDeleted:    checkAnthropicDeleted,
}

// anthropicRecords reads Anthropic's answers made of file metadata: one, or
// a list of them, {"data":[FileMetadata…],"has_more","first_id","last_id"}.
var anthropicRecords = records[anthropicFile, *anthropicFile]{noun: "file metadata"}

// NewAnthropic returns a client of Anthropic's Files API. opts.BaseURL is
// the host without /v1 (https://api.anthropic.com).
func NewAnthropic(opts Options, log *zap.Logger) (*Client, error) {
	return newClient(&anthropicDialect, opts, log)
}

// anthropicFile is Anthropic's file metadata; other members are ignored.
type anthropicFile struct {
	ID           string
	Type         string
	SizeBytes    int64
	HasSize      bool      // size_bytes is there, and not null
	CreatedAt    time.Time // RFC 3339
	Filename     string
	MimeType     string
	Downloadable bool
}

var anthropicFileNames = []string{"id", "type", "size_bytes", "created_at", "filename", "mime_type", "downloadable"}

// read reads file metadata into f.
func (f *anthropicFile) read(r *jsonReader) error {
	return members(r, f, anthropicFileNames, (*anthropicFile).member)
}

// member reads the member key; anthropicFileNames are the names it reads.
func (f *anthropicFile) member(r *jsonReader, key string) (known bool, err error) {
	switch key {
	case "id":
		return true, r.setString(&f.ID)
	case "type":
		return true, r.setString(&f.Type)
	case "size_bytes":
		return true, r.setInt64(&f.SizeBytes, &f.HasSize)
	case "created_at":
		return true, r.setTime(&f.CreatedAt)
	case "filename":
		return true, r.setString(&f.Filename)
	case "mime_type":
		return true, r.setString(&f.MimeType)
	case "downloadable":
		return true, r.setBool(&f.Downloadable, nil)
	}
	return false, nil
}

func (f *anthropicFile) info() (files.ProviderFileInfo, error) {
	if f.ID == "" || f.Type != "file" || !f.HasSize {
		return files.ProviderFileInfo{}, errors.New("not file metadata")
	}
	return files.ProviderFileInfo{
		ID:           f.ID,
		Filename:     f.Filename,
		MimeType:     f.MimeType,
		Size:         f.SizeBytes,
		CreatedAt:    f.CreatedAt.UTC(),
		Downloadable: f.Downloadable,
	}, nil
}

// uploaded is the file metadata an upload answers with.
func (f *anthropicFile) uploaded() (Uploaded, error) {
	if f.ID == "" || f.Type != "file" || !f.HasSize {
		return Uploaded{}, errors.New("answer is not file metadata")
	}
	return Uploaded{ID: f.ID, Bytes: f.SizeBytes, CreatedAt: f.CreatedAt.UTC()}, nil
}

// anthropicListQuery maps a page request to limit, after_id and before_id.
// Anthropic lists newest first only: oldest first cannot be asked for. The
// query is written as url.Values.Encode would, without building one.
func anthropicListQuery(q files.ProviderListQuery) (string, bool, error) {
	if q.Ascending {
		return "", false, fmt.Errorf("%w: anthropic lists newest first only", ErrUnsupportedQuery)
	}
	query := "limit=" + strconv.Itoa(listLimit(q))
	if q.BeforeID != "" {
		query = "before_id=" + url.QueryEscape(q.BeforeID) + "&" + query
	}
	if q.AfterID != "" {
		query = "after_id=" + url.QueryEscape(q.AfterID) + "&" + query
	}
	return query, false, nil
}

// decodeAnthropicError reads
// {"type":"error","error":{"type","message"},"request_id"}.
func decodeAnthropicError(body []byte) (typ, message, requestID string) {
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}
	if json.Unmarshal(body, &e) != nil {
		return "", "", ""
	}
	return e.Error.Type, e.Error.Message, e.RequestID
}

// checkAnthropicDeleted reads {"id","type":"file_deleted"}.
func checkAnthropicDeleted(body []byte, id string) error {
	var d struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	}
	if err := json.Unmarshal(body, &d); err != nil {
		return fmt.Errorf("decoding delete answer: %w", err)
	}
	if d.ID != id || d.Type != "file_deleted" {
		return errors.New("answer does not say the file was deleted")
	}
	return nil
}
