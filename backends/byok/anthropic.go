package byok

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// Anthropic protocol headers of the Files API (a beta).
const (
	AnthropicVersion   = "2023-06-01"
	AnthropicFilesBeta = "files-api-2025-04-14"
)

// Anthropic uploads to Anthropic's Files API: POST {base}/v1/files,
// multipart with one part file, authenticated with x-api-key plus the
// anthropic-version and anthropic-beta headers; DELETE {base}/v1/files/{id}.
// Request ids come in request-id. Safe for concurrent use.
type Anthropic struct {
	c *client
}

var _ Provider = (*Anthropic)(nil)

// NewAnthropic returns an Anthropic provider. opts.BaseURL is the host
// without /v1 (https://api.anthropic.com).
func NewAnthropic(opts Options, log *zap.Logger) (*Anthropic, error) {
	c, err := newClient(ProviderAnthropic, opts, wire{
		filesPath: "/v1/files",
		authorize: func(h http.Header, key string) {
			h.Set("x-api-key", key)
			h.Set("anthropic-version", AnthropicVersion)
			h.Set("anthropic-beta", AnthropicFilesBeta)
		},
		requestIDHeader: "request-id",
		decodeUpload:    decodeAnthropicFile,
		decodeError:     decodeAnthropicError,
	}, log)
	if err != nil {
		return nil, err
	}
	return &Anthropic{c: c}, nil
}

// Name returns "anthropic".
func (p *Anthropic) Name() string { return ProviderAnthropic }

// Upload implements Provider.
func (p *Anthropic) Upload(ctx context.Context, key Secret, f File) (Uploaded, error) {
	return p.c.upload(ctx, key, f)
}

// Delete implements Provider.
func (p *Anthropic) Delete(ctx context.Context, key Secret, id string) error {
	return p.c.delete(ctx, key, id)
}

// anthropicFile is Anthropic's file metadata; other fields are ignored.
type anthropicFile struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	SizeBytes *int64    `json:"size_bytes"`
	CreatedAt time.Time `json:"created_at"` // RFC 3339
}

func decodeAnthropicFile(body []byte) (Uploaded, error) {
	var f anthropicFile
	if err := json.Unmarshal(body, &f); err != nil {
		return Uploaded{}, fmt.Errorf("decoding file metadata: %w", err)
	}
	if f.ID == "" || f.Type != "file" || f.SizeBytes == nil {
		return Uploaded{}, errors.New("answer is not file metadata")
	}
	return Uploaded{ID: f.ID, Bytes: *f.SizeBytes, CreatedAt: f.CreatedAt.UTC()}, nil
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
