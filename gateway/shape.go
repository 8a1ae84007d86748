package gateway

import (
	"cmp"
	"net/http"
	"strings"
	"time"

	"github.com/aigateway/gateway/files"
)

// shape is the dress of a file answer: the same file, in the form the
// client's SDK parses (DESIGN.md §2).
type shape string

const (
	shapeService   shape = "service"
	shapeOpenAI    shape = "openai"
	shapeAnthropic shape = "anthropic"
)

// negotiateShape picks the shape of a files answer from the request
// headers, the one place that decides it. In order:
//   - an anthropic-version header, or a User-Agent starting "Anthropic/":
//     anthropic. This is checked first: the Anthropic SDKs are generated
//     by the same toolchain as OpenAI's and send the same X-Stainless-*
//     headers, so those say nothing of the shape;
//   - a User-Agent of the OpenAI family: openai. The Python SDK builds it
//     from the client's class name, so AsyncOpenAI, AzureOpenAI and
//     AsyncAzureOpenAI send their own names; the Node SDK sends "OpenAI/JS";
//   - anything else (curl, the service's own SDK, browsers): service.
//
// Only prefixes are compared: SDK versions and platforms follow them.
func negotiateShape(r *http.Request) shape {
	ua := r.Header.Get("User-Agent")
	switch {
	case r.Header.Get("anthropic-version") != "" || strings.HasPrefix(ua, "Anthropic/"):
		return shapeAnthropic
	case openAIAgent(ua):
		return shapeOpenAI
	default:
		return shapeService
	}
}

// openAIAgents are the User-Agent prefixes of the OpenAI SDKs' clients.
var openAIAgents = []string{"OpenAI/", "AsyncOpenAI/", "AzureOpenAI/", "AsyncAzureOpenAI/"}

func openAIAgent(ua string) bool {
	for _, p := range openAIAgents {
		if strings.HasPrefix(ua, p) {
			return true
		}
	}
	return false
}

// The file in each shape. The service and anthropic shapes carry the same
// fields (the File of the spec); the OpenAI one is OpenAI's file object.
type (
	serviceFile struct {
		Shape        shape  `json:"_shape"`
		ID           string `json:"id"`
		Type         string `json:"type"`
		Filename     string `json:"filename"`
		MimeType     string `json:"mime_type"`
		SizeBytes    int64  `json:"size_bytes"`
		Downloadable bool   `json:"downloadable"`
		CreatedAt    string `json:"created_at"`
	}
	openAIFile struct {
		Shape     shape         `json:"_shape"`
		ID        string        `json:"id"`
		Object    string        `json:"object"`
		Bytes     int64         `json:"bytes"`
		CreatedAt int64         `json:"created_at"`
		Filename  string        `json:"filename"`
		Purpose   files.Purpose `json:"purpose"`
		Status    string        `json:"status"`
	}
)

// fileShape dresses rec in s. downloadable is what the deployment allows
// (files.downloadable).
func fileShape(s shape, rec files.Record, downloadable bool) any {
	if s == shapeOpenAI {
		return openAIFile{
			Shape: s, ID: rec.ID, Object: "file", Bytes: rec.Size, CreatedAt: rec.CreatedAt.Unix(),
			Filename: rec.Filename, Purpose: cmp.Or(rec.Purpose, files.DefaultPurpose), Status: "processed",
		}
	}
	return serviceFile{
		Shape: s, ID: rec.ID, Type: "file", Filename: rec.Filename, MimeType: rec.MimeType,
		SizeBytes: rec.Size, Downloadable: downloadable, CreatedAt: rec.CreatedAt.UTC().Format(time.RFC3339Nano),
	}
}
