package providers

// The decoders of file records as they were written with encoding/json,
// kept as the reference the jsonReader decoders are held to.

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aigateway/gateway/files"
)

// stdOpenAIFile is OpenAI's File object; other fields are ignored.
type stdOpenAIFile struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	Bytes     *int64 `json:"bytes"`
	CreatedAt int64  `json:"created_at"` // Unix seconds
	Filename  string `json:"filename"`
	Purpose   string `json:"purpose"`
}

func (f *stdOpenAIFile) info() (files.ProviderFileInfo, error) {
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

// stdDecodeOpenAIList reads {"object":"list","data":[File…],"has_more",…}.
func stdDecodeOpenAIList(body []byte) (files.ProviderPage, error) {
	var l struct {
		Object  string           `json:"object"`
		Data    *[]stdOpenAIFile `json:"data"`
		HasMore *bool            `json:"has_more"`
	}
	if err := json.Unmarshal(body, &l); err != nil {
		return files.ProviderPage{}, fmt.Errorf("decoding file list: %w", err)
	}
	if l.Object != "list" || l.Data == nil || l.HasMore == nil {
		return files.ProviderPage{}, errors.New("answer is not a file list")
	}
	return pageOf(*l.Data, *l.HasMore)
}

func stdDecodeOpenAIInfo(body []byte) (files.ProviderFileInfo, error) {
	var f stdOpenAIFile
	if err := json.Unmarshal(body, &f); err != nil {
		return files.ProviderFileInfo{}, fmt.Errorf("decoding file object: %w", err)
	}
	return f.info()
}

func stdDecodeOpenAIFile(body []byte) (Uploaded, error) {
	var f stdOpenAIFile
	if err := json.Unmarshal(body, &f); err != nil {
		return Uploaded{}, fmt.Errorf("decoding file object: %w", err)
	}
	if f.ID == "" || f.Object != "file" || f.Bytes == nil {
		return Uploaded{}, errors.New("answer is not a file object")
	}
	return Uploaded{ID: f.ID, Bytes: *f.Bytes, CreatedAt: time.Unix(f.CreatedAt, 0).UTC()}, nil
}

// stdAnthropicFile is Anthropic's file metadata; other fields are ignored.
type stdAnthropicFile struct {
	ID           string    `json:"id"`
	Type         string    `json:"type"`
	SizeBytes    *int64    `json:"size_bytes"`
	CreatedAt    time.Time `json:"created_at"` // RFC 3339
	Filename     string    `json:"filename"`
	MimeType     string    `json:"mime_type"`
	Downloadable bool      `json:"downloadable"`
}

func (f *stdAnthropicFile) info() (files.ProviderFileInfo, error) {
	if f.ID == "" || f.Type != "file" || f.SizeBytes == nil {
		return files.ProviderFileInfo{}, errors.New("not file metadata")
	}
	return files.ProviderFileInfo{
		ID:           f.ID,
		Filename:     f.Filename,
		MimeType:     f.MimeType,
		Size:         *f.SizeBytes,
		CreatedAt:    f.CreatedAt.UTC(),
		Downloadable: f.Downloadable,
	}, nil
}

// stdDecodeAnthropicList reads {"data":[FileMetadata…],"has_more","first_id","last_id"}.
func stdDecodeAnthropicList(body []byte) (files.ProviderPage, error) {
	var l struct {
		Data    *[]stdAnthropicFile `json:"data"`
		HasMore *bool               `json:"has_more"`
	}
	if err := json.Unmarshal(body, &l); err != nil {
		return files.ProviderPage{}, fmt.Errorf("decoding file list: %w", err)
	}
	if l.Data == nil || l.HasMore == nil {
		return files.ProviderPage{}, errors.New("answer is not a file list")
	}
	return pageOf(*l.Data, *l.HasMore)
}

func stdDecodeAnthropicInfo(body []byte) (files.ProviderFileInfo, error) {
	var f stdAnthropicFile
	if err := json.Unmarshal(body, &f); err != nil {
		return files.ProviderFileInfo{}, fmt.Errorf("decoding file metadata: %w", err)
	}
	return f.info()
}

func stdDecodeAnthropicFile(body []byte) (Uploaded, error) {
	var f stdAnthropicFile
	if err := json.Unmarshal(body, &f); err != nil {
		return Uploaded{}, fmt.Errorf("decoding file metadata: %w", err)
	}
	if f.ID == "" || f.Type != "file" || f.SizeBytes == nil {
		return Uploaded{}, errors.New("answer is not file metadata")
	}
	return Uploaded{ID: f.ID, Bytes: *f.SizeBytes, CreatedAt: f.CreatedAt.UTC()}, nil
}
