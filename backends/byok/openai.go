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

// OpenAIPurpose is the purpose field of uploads: files given as input to
// models.
const OpenAIPurpose = "user_data"

// OpenAI uploads to OpenAI's Files API: POST {base}/files, multipart with
// the fields purpose and file, authenticated with "Authorization: Bearer";
// DELETE {base}/files/{id}. Request ids come in x-request-id. Safe for
// concurrent use.
type OpenAI struct {
	c *client
}

var _ Provider = (*OpenAI)(nil)

// NewOpenAI returns an OpenAI provider. opts.BaseURL includes the /v1
// prefix (https://api.openai.com/v1).
func NewOpenAI(opts Options, log *zap.Logger) (*OpenAI, error) {
	c, err := newClient(ProviderOpenAI, opts, wire{
		filesPath: "/files",
		fields:    [][2]string{{"purpose", OpenAIPurpose}},
		authorize: func(h http.Header, key string) {
			h.Set("Authorization", "Bearer "+key)
		},
		requestIDHeader: "x-request-id",
		decodeUpload:    decodeOpenAIFile,
		decodeError:     decodeOpenAIError,
	}, log)
	if err != nil {
		return nil, err
	}
	return &OpenAI{c: c}, nil
}

// Name returns "openai".
func (p *OpenAI) Name() string { return ProviderOpenAI }

// Upload implements Provider.
func (p *OpenAI) Upload(ctx context.Context, key Secret, f File) (Uploaded, error) {
	return p.c.upload(ctx, key, f)
}

// Delete implements Provider.
func (p *OpenAI) Delete(ctx context.Context, key Secret, id string) error {
	return p.c.delete(ctx, key, id)
}

// openAIFile is OpenAI's File object; other fields are ignored.
type openAIFile struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	Bytes     *int64 `json:"bytes"`
	CreatedAt int64  `json:"created_at"` // Unix seconds
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
