package catalog

import (
	"errors"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

// at returns a time on a fixed day at hh:mm UTC.
func at(hh, mm int) time.Time { return time.Date(2026, 8, 18, hh, mm, 30, 0, time.UTC) }

func TestPrice(t *testing.T) {
	windowed := &Model{ID: "t/windowed", Pricing: PublicPricing{
		Prompt: "0.000002", Completion: "0.00001", InputCacheRead: "0.0000002",
		Overrides: []PricingOverride{{UTCStart: ptr[int64](1000), UTCEnd: ptr[int64](1400), Prompt: "0.000001"}},
	}}
	wrapping := &Model{ID: "t/wrapping", Pricing: PublicPricing{
		Prompt: "0.000002", Completion: "0.00001",
		Overrides: []PricingOverride{{UTCStart: ptr[int64](2200), UTCEnd: ptr[int64](600), Prompt: "0.0000005", Completion: "0.0000025"}},
	}}
	long := &Model{ID: "t/long", Pricing: PublicPricing{
		Prompt: "0.000003", Completion: "0.000015", InputCacheRead: "0.0000003",
		Overrides: []PricingOverride{{MinPromptTokens: ptr[int64](200000), Prompt: "0.000006", Completion: "0.0000225"}},
	}}
	// Two overrides that overlap at night for long prompts: the later one
	// wins on prompt, completion comes from the earlier one.
	overlapping := &Model{ID: "t/overlapping", Pricing: PublicPricing{
		Prompt: "0.000004", Completion: "0.00002",
		Overrides: []PricingOverride{
			{MinPromptTokens: ptr[int64](1000), Prompt: "0.000008", Completion: "0.00004"},
			{UTCStart: ptr[int64](0), UTCEnd: ptr[int64](800), Prompt: "0.000002", Audio: "0.00003"},
		},
	}}
	discounted := func(d float64) *Model {
		return &Model{ID: "t/discounted", Pricing: PublicPricing{
			Prompt: "0.00000033", Completion: "0.000002", Request: "0.01", Discount: &d,
			Overrides: []PricingOverride{{MinPromptTokens: ptr[int64](10), Prompt: "0.00000066"}},
		}}
	}
	type want struct{ prompt, completion, cacheRead, audio, request string }
	tests := []struct {
		name   string
		model  *Model
		tokens int64
		at     time.Time
		want   want
	}{
		{"window: minute before start", windowed, 1, at(9, 59), want{prompt: "0.000002", completion: "0.00001", cacheRead: "0.0000002"}},
		{"window: start is inclusive", windowed, 1, at(10, 0), want{prompt: "0.000001", completion: "0.00001", cacheRead: "0.0000002"}},
		{"window: last minute", windowed, 1, at(13, 59), want{prompt: "0.000001", completion: "0.00001", cacheRead: "0.0000002"}},
		{"window: end is exclusive", windowed, 1, at(14, 0), want{prompt: "0.000002", completion: "0.00001", cacheRead: "0.0000002"}},
		{"window: UTC clock, not local", windowed, 1, at(10, 30).In(time.FixedZone("UTC-10", -10*3600)), want{prompt: "0.000001", completion: "0.00001", cacheRead: "0.0000002"}},
		{"wrap: before start", wrapping, 1, at(21, 59), want{prompt: "0.000002", completion: "0.00001"}},
		{"wrap: start", wrapping, 1, at(22, 0), want{prompt: "0.0000005", completion: "0.0000025"}},
		{"wrap: before midnight", wrapping, 1, at(23, 59), want{prompt: "0.0000005", completion: "0.0000025"}},
		{"wrap: midnight", wrapping, 1, at(0, 0), want{prompt: "0.0000005", completion: "0.0000025"}},
		{"wrap: last minute", wrapping, 1, at(5, 59), want{prompt: "0.0000005", completion: "0.0000025"}},
		{"wrap: end is exclusive", wrapping, 1, at(6, 0), want{prompt: "0.000002", completion: "0.00001"}},
		{"min tokens: equal is not greater", long, 200000, at(12, 0), want{prompt: "0.000003", completion: "0.000015", cacheRead: "0.0000003"}},
		{"min tokens: one more", long, 200001, at(12, 0), want{prompt: "0.000006", completion: "0.0000225", cacheRead: "0.0000003"}},
		{"overlap: neither", overlapping, 1000, at(12, 0), want{prompt: "0.000004", completion: "0.00002"}},
		{"overlap: first only", overlapping, 1001, at(12, 0), want{prompt: "0.000008", completion: "0.00004"}},
		{"overlap: second only, adds a key", overlapping, 5, at(7, 59), want{prompt: "0.000002", completion: "0.00002", audio: "0.00003"}},
		{"overlap: both, later wins per key", overlapping, 5000, at(3, 0), want{prompt: "0.000002", completion: "0.00004", audio: "0.00003"}},
		{"discount 0", discounted(0), 1, at(0, 0), want{prompt: "0.00000033", completion: "0.000002", request: "0.01"}},
		{"discount 1 is free", discounted(1), 1, at(0, 0), want{prompt: "0", completion: "0", request: "0"}},
		{"discount 0.1 is exact", discounted(0.1), 1, at(0, 0), want{prompt: "0.000000297", completion: "0.0000018", request: "0.009"}},
		{"discount after overrides", discounted(0.5), 11, at(0, 0), want{prompt: "0.00000033", completion: "0.000001", request: "0.005"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Price(tc.model, tc.tokens, tc.at)
			if err != nil {
				t.Fatal(err)
			}
			check := func(key, want string, got interface{ Text(byte) string }, isNil bool) {
				t.Helper()
				switch {
				case want == "" && !isNil:
					t.Errorf("%s = %s, want unpriced", key, got.Text('f'))
				case want != "" && isNil:
					t.Errorf("%s unpriced, want %s", key, want)
				case want != "" && got.Text('f') != want:
					t.Errorf("%s = %s, want %s", key, got.Text('f'), want)
				}
			}
			check("prompt", tc.want.prompt, p.Prompt, p.Prompt == nil)
			check("completion", tc.want.completion, p.Completion, p.Completion == nil)
			check("input_cache_read", tc.want.cacheRead, p.InputCacheRead, p.InputCacheRead == nil)
			check("audio", tc.want.audio, p.Audio, p.Audio == nil)
			check("request", tc.want.request, p.Request, p.Request == nil)
			if p.WebSearch != nil || p.ImageOutput != nil {
				t.Error("a key the model does not price is set")
			}
		})
	}
}

func TestPriceErrors(t *testing.T) {
	tests := []struct {
		name  string
		model *Model
		want  error
	}{
		{"router", &Model{ID: "t/r", Pricing: PublicPricing{Prompt: "-1", Completion: "-1"}}, ErrDynamicPrice},
		{"router price from an override", &Model{ID: "t/r", Pricing: PublicPricing{Prompt: "0", Completion: "0",
			Overrides: []PricingOverride{{MinPromptTokens: ptr[int64](0), Completion: "-1"}}}}, ErrDynamicPrice},
		{"not a decimal", &Model{ID: "t/b", Pricing: PublicPricing{Prompt: "abc", Completion: "0"}}, ErrBadPrice},
		{"exponent", &Model{ID: "t/b", Pricing: PublicPricing{Prompt: "1e-6", Completion: "0"}}, ErrBadPrice},
		{"missing completion", &Model{ID: "t/b", Pricing: PublicPricing{Prompt: "0"}}, ErrBadPrice},
		{"half a window", &Model{ID: "t/b", Pricing: PublicPricing{Prompt: "0", Completion: "0",
			Overrides: []PricingOverride{{UTCStart: ptr[int64](100), Prompt: "1"}}}}, ErrBadPrice},
		{"bad HHMM", &Model{ID: "t/b", Pricing: PublicPricing{Prompt: "0", Completion: "0",
			Overrides: []PricingOverride{{UTCStart: ptr[int64](100), UTCEnd: ptr[int64](2460), Prompt: "1"}}}}, ErrBadPrice},
		{"discount above 1", &Model{ID: "t/b", Pricing: PublicPricing{Prompt: "0", Completion: "0", Discount: ptr(1.5)}}, ErrBadPrice},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Price(tc.model, 1, at(12, 0))
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestPriceShipped evaluates a real model of the shipped catalog with four
// daily windows, one of them wrapping midnight.
func TestPriceShipped(t *testing.T) {
	c, _ := loadShipped(t)
	e, ok := c.LookupID("deepseek/deepseek-v4-pro")
	if !ok {
		t.Fatal("deepseek/deepseek-v4-pro is not in the shipped catalog")
	}
	for _, tc := range []struct {
		at     time.Time
		prompt string
	}{
		{at(0, 59), "0.00000066"}, {at(1, 0), "0.00000132"}, {at(3, 59), "0.00000132"}, {at(4, 0), "0.00000066"},
		{at(6, 0), "0.00000132"}, {at(9, 59), "0.00000132"}, {at(10, 0), "0.00000066"}, {at(23, 59), "0.00000066"},
	} {
		p, err := Price(e.Model, 1000, tc.at)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Prompt.Text('f'); got != tc.prompt {
			t.Errorf("%s: prompt %s, want %s", tc.at.Format("15:04"), got, tc.prompt)
		}
	}
	router, _ := c.LookupID("openrouter/auto")
	if _, err := Price(router.Model, 1, at(0, 0)); !errors.Is(err, ErrDynamicPrice) {
		t.Errorf("router: %v", err)
	}
}
