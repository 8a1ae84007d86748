package catalog

import (
	"fmt"
	"strconv"
	"time"

	"github.com/cockroachdb/apd/v3"
)

// Prices are a model's effective prices in USD for one request, exact
// decimals. Prompt and Completion are always set; any other field is nil when
// the model does not price that unit. Use Decimal.Text('f') to print one
// without exponent.
type Prices struct {
	Prompt            *apd.Decimal // per prompt token
	Completion        *apd.Decimal // per completion token
	Request           *apd.Decimal // per request
	Image             *apd.Decimal // per input image
	ImageOutput       *apd.Decimal // per output image
	ImageToken        *apd.Decimal // per image token
	Audio             *apd.Decimal // per audio input token
	AudioOutput       *apd.Decimal // per audio output token
	InputAudioCache   *apd.Decimal // per cached audio input token
	InputCacheRead    *apd.Decimal // per cached input token read
	InputCacheWrite   *apd.Decimal // per cache-write token (default lifetime)
	InputCacheWrite1h *apd.Decimal // per 1-hour cache-write token
	InternalReasoning *apd.Decimal // per internal reasoning token
	WebSearch         *apd.Decimal // per web search
}

type priceKey int

const (
	keyPrompt priceKey = iota
	keyCompletion
	keyRequest
	keyImage
	keyImageOutput
	keyImageToken
	keyAudio
	keyAudioOutput
	keyInputAudioCache
	keyInputCacheRead
	keyInputCacheWrite
	keyInputCacheWrite1h
	keyInternalReasoning
	keyWebSearch
	numPriceKeys
)

var priceKeyNames = [numPriceKeys]string{"prompt", "completion", "request", "image", "image_output",
	"image_token", "audio", "audio_output", "input_audio_cache", "input_cache_read", "input_cache_write",
	"input_cache_write_1h", "internal_reasoning", "web_search"}

func (p *Prices) slot(k priceKey) **apd.Decimal {
	return [numPriceKeys]**apd.Decimal{&p.Prompt, &p.Completion, &p.Request, &p.Image, &p.ImageOutput,
		&p.ImageToken, &p.Audio, &p.AudioOutput, &p.InputAudioCache, &p.InputCacheRead,
		&p.InputCacheWrite, &p.InputCacheWrite1h, &p.InternalReasoning, &p.WebSearch}[k]
}

func basePrices(p *PublicPricing) [numPriceKeys]string {
	return [numPriceKeys]string{p.Prompt, p.Completion, p.Request, p.Image, p.ImageOutput, p.ImageToken,
		p.Audio, p.AudioOutput, p.InputAudioCache, p.InputCacheRead, p.InputCacheWrite,
		p.InputCacheWrite1h, p.InternalReasoning, p.WebSearch}
}

func overridePrices(o *PricingOverride) [numPriceKeys]string {
	var s [numPriceKeys]string
	s[keyPrompt], s[keyCompletion], s[keyAudio] = o.Prompt, o.Completion, o.Audio
	s[keyInputAudioCache], s[keyInputCacheRead] = o.InputAudioCache, o.InputCacheRead
	s[keyInputCacheWrite], s[keyInputCacheWrite1h] = o.InputCacheWrite, o.InputCacheWrite1h
	return s
}

// decimalCtx is wide enough that the products below are exact: prices and
// the discount factor have far fewer than 34 significant digits each.
var decimalCtx = apd.BaseContext.WithPrecision(80)

// Price evaluates m's pricing for a request with promptTokens prompt tokens
// made at the instant at (only its UTC clock matters):
//
//  1. the top-level prices;
//  2. every override whose conditions all hold, in order, later ones winning
//     per price key and absent keys inheriting: min_prompt_tokens holds when
//     promptTokens is strictly greater; utc_start/utc_end hold when the UTC
//     time of day is in [utc_start, utc_end), which wraps past midnight when
//     utc_start > utc_end;
//  3. the discount: every price times (1 - discount).
//
// Arithmetic is exact decimal; results have trailing zeros removed.
// A router model priced "-1" (after overrides) yields ErrDynamicPrice: its
// price is the routed model's. A model the loader would refuse may yield
// ErrBadPrice. Price is safe for concurrent use and does not modify m.
func Price(m *Model, promptTokens int64, at time.Time) (Prices, error) {
	vals := basePrices(&m.Pricing)
	at = at.UTC()
	minute := int64(at.Hour()*60 + at.Minute())
	for i := range m.Pricing.Overrides {
		o := &m.Pricing.Overrides[i]
		ok, err := applies(o, promptTokens, minute)
		if err != nil {
			return Prices{}, fmt.Errorf("%w: %s: pricing.overrides[%d]: %v", ErrBadPrice, m.ID, i, err)
		}
		if !ok {
			continue
		}
		for k, s := range overridePrices(o) {
			if s != "" {
				vals[k] = s
			}
		}
	}

	factor := apd.New(1, 0)
	if m.Pricing.Discount != nil {
		d := *m.Pricing.Discount
		if d < 0 || d > 1 {
			return Prices{}, fmt.Errorf("%w: %s: pricing.discount %v is not a fraction from 0 to 1", ErrBadPrice, m.ID, d)
		}
		// The shortest decimal that round-trips is the number as written
		// in the file, so 0.1 stays exactly 0.1.
		disc, _, err := apd.NewFromString(strconv.FormatFloat(d, 'f', -1, 64))
		if err != nil {
			return Prices{}, fmt.Errorf("%w: %s: pricing.discount: %v", ErrBadPrice, m.ID, err)
		}
		if _, err := decimalCtx.Sub(factor, factor, disc); err != nil {
			return Prices{}, fmt.Errorf("%w: %s: pricing.discount: %v", ErrBadPrice, m.ID, err)
		}
	}

	var out Prices
	for k, s := range vals {
		if s == "" {
			continue
		}
		name := priceKeyNames[k]
		if s == RouterPrice {
			return Prices{}, fmt.Errorf("%w: %s: pricing.%s is %s", ErrDynamicPrice, m.ID, name, RouterPrice)
		}
		if !priceRE.MatchString(s) {
			return Prices{}, fmt.Errorf("%w: %s: pricing.%s %q is not a decimal price", ErrBadPrice, m.ID, name, s)
		}
		v, _, err := apd.NewFromString(s)
		if err != nil {
			return Prices{}, fmt.Errorf("%w: %s: pricing.%s: %v", ErrBadPrice, m.ID, name, err)
		}
		cond, err := decimalCtx.Mul(v, v, factor)
		if err == nil && cond.Inexact() {
			err = fmt.Errorf("inexact result")
		}
		if err == nil {
			_, _, err = decimalCtx.Reduce(v, v)
		}
		if err != nil {
			return Prices{}, fmt.Errorf("%w: %s: pricing.%s: %v", ErrBadPrice, m.ID, name, err)
		}
		*out.slot(priceKey(k)) = v
	}
	if out.Prompt == nil || out.Completion == nil {
		return Prices{}, fmt.Errorf("%w: %s: pricing.prompt and pricing.completion are required", ErrBadPrice, m.ID)
	}
	return out, nil
}

// applies reports whether all conditions of o hold for a request with
// promptTokens prompt tokens at minute (minutes since 00:00 UTC).
func applies(o *PricingOverride, promptTokens, minute int64) (bool, error) {
	if o.MinPromptTokens != nil && promptTokens <= *o.MinPromptTokens {
		return false, nil
	}
	if (o.UTCStart == nil) != (o.UTCEnd == nil) {
		return false, fmt.Errorf("utc_start and utc_end go together")
	}
	if o.UTCStart == nil {
		return true, nil
	}
	start, end := *o.UTCStart, *o.UTCEnd
	if !validHHMM(start) || !validHHMM(end) || start == end {
		return false, fmt.Errorf("window [%d, %d) is not a non-empty pair of HHMM times", start, end)
	}
	return inWindow(minute, start/100*60+start%100, end/100*60+end%100), nil
}

// inWindow reports whether minute is in [start, end), wrapping past midnight
// when start > end.
func inWindow(minute, start, end int64) bool {
	if start < end {
		return start <= minute && minute < end
	}
	return minute >= start || minute < end
}
