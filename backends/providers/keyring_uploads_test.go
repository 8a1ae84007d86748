package providers

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aigateway/gateway/files"
)

// TestUploadErrorMapping: the Uploads resource's failures reach the
// service as its sentinels, the *ProviderError (and its metadata) still
// reachable under them.
func TestUploadErrorMapping(t *testing.T) {
	pe := func(status int) error {
		return &ProviderError{Provider: "openai", Op: "upload part", Status: status, RequestID: "req_1"}
	}
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"refused", pe(400), files.ErrProviderRejected},
		{"unknown to the provider", pe(404), files.ErrProviderRejected},
		{"key refused", pe(401), files.ErrProvider},
		{"key forbidden", pe(403), files.ErrProvider},
		{"throttled", pe(429), files.ErrProviderRateLimited},
		{"failed", pe(502), files.ErrProvider},
		{"timed out", &ProviderError{Provider: "openai", Timeout: true}, files.ErrProviderTimeout},
		{"not an upload id", fmt.Errorf("x: %w", ErrInvalidFileID), files.ErrUploadNotFound},
		{"no uploads resource", ErrNoUploads, files.ErrProviderRejected},
		{"caller gone", context.Canceled, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := uploadError(tt.err)
			if !errors.Is(got, tt.want) {
				t.Fatalf("uploadError(%v) = %v, want %v", tt.err, got, tt.want)
			}
			var p *ProviderError
			if errors.As(tt.err, &p) && (!errors.As(got, &p) || p.RequestID != tt.err.(*ProviderError).RequestID) {
				t.Fatalf("the provider's error is not reachable under %v", got)
			}
			if tt.want == files.ErrProviderRejected && errors.Is(got, files.ErrProvider) {
				t.Fatalf("a refusal is also a provider failure: %v", got)
			}
		})
	}
}
