package seal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

const plainKey = "sk-live-0123456789abcdef"

func TestSecretRedactsInFmt(t *testing.T) {
	s := NewSecret(plainKey)
	type exported struct{ Key Secret }
	type unexported struct{ key Secret }
	cases := []struct {
		name string
		got  string
	}{
		{"%s", fmt.Sprintf("%s", s)},
		{"%v", fmt.Sprintf("%v", s)},
		{"%+v", fmt.Sprintf("%+v", s)},
		{"%#v", fmt.Sprintf("%#v", s)},
		{"%q", fmt.Sprintf("%q", s)},
		{"%x", fmt.Sprintf("%x", s)},
		{"%d (bad verb)", fmt.Sprintf("%d", s)},
		{"Sprint", fmt.Sprint(s)},
		{"pointer", fmt.Sprintf("%v", &s)},
		{"exported field %+v", fmt.Sprintf("%+v", exported{s})},
		{"exported field %#v", fmt.Sprintf("%#v", exported{s})},
		{"unexported field %+v", fmt.Sprintf("%+v", unexported{s})},
		{"unexported field %#v", fmt.Sprintf("%#v", unexported{s})},
		{"slice", fmt.Sprintf("%v", []Secret{s})},
		{"map", fmt.Sprintf("%v", map[string]Secret{"k": s})},
		{"String", s.String()},
		{"GoString", s.GoString()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if strings.Contains(c.got, plainKey) || strings.Contains(c.got, "0123456789abcdef") {
				t.Fatalf("key leaked: %s", c.got)
			}
			// fmt falls back to reflection for unexported fields: that path
			// must show a pointer, not the value.
			if !strings.Contains(c.got, Redacted) && !strings.Contains(c.name, "unexported") {
				t.Fatalf("want %s in %q", Redacted, c.got)
			}
		})
	}
}

func TestSecretRedactsInEncoders(t *testing.T) {
	s := NewSecret(plainKey)
	var zbuf bytes.Buffer
	zl := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&zbuf), zap.DebugLevel))
	zl.Info("keys", zap.Any("any", s), zap.Stringer("stringer", s), zap.Reflect("reflect", struct{ Key Secret }{s}),
		zap.Any("struct", struct{ Key Secret }{s}))
	_ = zl.Sync()

	var sbuf bytes.Buffer
	slog.New(slog.NewJSONHandler(&sbuf, nil)).Info("keys", "key", s)

	jsonOut, err := json.Marshal(struct{ Key Secret }{s})
	if err != nil {
		t.Fatal(err)
	}
	text, _ := s.MarshalText()

	for name, out := range map[string]string{"zap": zbuf.String(), "slog": sbuf.String(), "json": string(jsonOut), "text": string(text)} {
		t.Run(name, func(t *testing.T) {
			if strings.Contains(out, plainKey) {
				t.Fatalf("key leaked: %s", out)
			}
			if !strings.Contains(out, Redacted) {
				t.Fatalf("want %s in %s", Redacted, out)
			}
		})
	}
	if n := strings.Count(zbuf.String(), Redacted); n != 4 {
		t.Fatalf("zap: want 4 redacted fields, got %d in %s", n, zbuf.String())
	}
}

func TestSecretValue(t *testing.T) {
	tests := []struct {
		in, reveal string
		zero       bool
	}{
		{plainKey, plainKey, false},
		{" " + plainKey + "\n", plainKey, false},
		{"", "", true},
		{" \n", "", true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.in), func(t *testing.T) {
			s := NewSecret(tt.in)
			if s.Reveal() != tt.reveal || s.IsZero() != tt.zero {
				t.Fatalf("Reveal=%q IsZero=%v, want %q %v", s.Reveal(), s.IsZero(), tt.reveal, tt.zero)
			}
		})
	}
	if got := (Secret{}).String(); got != "" {
		t.Fatalf("zero String = %q, want empty", got)
	}
}
