package files

import (
	"errors"
	"strings"

	"github.com/aigateway/gateway/internal/invalid"
)

// Purpose is what a file is uploaded for, in the OpenAI Files API's terms:
// the OpenAI SDKs require one on upload and expect it back in the file
// object. The gateway stores and echoes it; it changes nothing else about
// the file.
type Purpose string

// The purposes an upload may name.
const (
	PurposeAssistants Purpose = "assistants"
	PurposeBatch      Purpose = "batch"
	PurposeFineTune   Purpose = "fine-tune"
	PurposeVision     Purpose = "vision"
	PurposeUserData   Purpose = "user_data"
	PurposeEvals      Purpose = "evals"
)

// DefaultPurpose is the purpose of a file uploaded without one.
const DefaultPurpose = PurposeUserData

var purposes = []Purpose{PurposeAssistants, PurposeBatch, PurposeFineTune, PurposeVision, PurposeUserData, PurposeEvals}

// ErrInvalidPurpose: the upload names a purpose outside the list (HTTP
// 400). Returned wrapped in *PurposeError.
var ErrInvalidPurpose = errors.New("invalid purpose")

// PurposeError is an unknown purpose. Neither its text nor its Metadata
// repeats the value sent.
type PurposeError struct{}

func (*PurposeError) Error() string { return ErrInvalidPurpose.Error() + ": " + purposeRule }
func (*PurposeError) Unwrap() error { return ErrInvalidPurpose }

// FieldProblems names the field and the values allowed.
func (*PurposeError) FieldProblems() []invalid.Field {
	return []invalid.Field{{Name: "purpose", Problem: purposeRule}}
}

var purposeRule = func() string {
	names := make([]string, len(purposes))
	for i, p := range purposes {
		names[i] = string(p)
	}
	return "must be one of " + strings.Join(names, ", ")
}()

// ParsePurpose checks a purpose as sent by a client: "" is DefaultPurpose,
// a listed value is itself (exactly: no case folding, no trimming, as the
// OpenAI API does), anything else a *PurposeError.
func ParsePurpose(s string) (Purpose, error) {
	if s == "" {
		return DefaultPurpose, nil
	}
	for _, p := range purposes {
		if string(p) == s {
			return p, nil
		}
	}
	return "", &PurposeError{}
}
