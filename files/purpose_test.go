package files

import (
	"errors"
	"testing"

	"github.com/aigateway/gateway/internal/invalid"
)

func TestParsePurpose(t *testing.T) {
	tests := []struct {
		in   string
		want Purpose
		ok   bool
	}{
		{"", PurposeUserData, true},
		{"assistants", PurposeAssistants, true},
		{"batch", PurposeBatch, true},
		{"fine-tune", PurposeFineTune, true},
		{"vision", PurposeVision, true},
		{"user_data", PurposeUserData, true},
		{"evals", PurposeEvals, true},
		{"Assistants", "", false},
		{" batch", "", false},
		{"fine_tune", "", false},
		{"assistants_output", "", false}, // an output-only purpose of OpenAI's, never uploaded
		{"<script>", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParsePurpose(tt.in)
			if tt.ok {
				if err != nil || got != tt.want {
					t.Fatalf("ParsePurpose(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
				}
				return
			}
			var pe *PurposeError
			if !errors.Is(err, ErrInvalidPurpose) || !errors.As(err, &pe) {
				t.Fatalf("ParsePurpose(%q) error = %v, want a *PurposeError", tt.in, err)
			}
			// The same text whatever was sent: the value is never echoed.
			const rule = "must be one of assistants, batch, fine-tune, vision, user_data, evals"
			fields := invalid.Fields(err)
			if len(fields) != 1 || fields[0] != (invalid.Field{Name: "purpose", Problem: rule}) || err.Error() != "invalid purpose: "+rule {
				t.Errorf("fields %v, text %q; want the rule %q alone", fields, err, rule)
			}
		})
	}
}
