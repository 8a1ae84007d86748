package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/aigateway/gateway/client"
)

// modelsPerPage is the page size of the model list.
const modelsPerPage = 50

type modelsData struct {
	Models []client.Model
	Total  int
	Pager  pager
	// The query, echoed into the form.
	Modality, Params, Sort string
	Modalities, Sorts      []string
}

// modelSorts are the sorts of GET /models this gateway serves.
var modelSorts = []string{"pricing-low-to-high", "pricing-high-to-low", "context-high-to-low", "newest",
	"intelligence-high-to-low", "coding-high-to-low", "agentic-high-to-low", "design-arena-elo-high-to-low"}

// outputModalities are the filters of output_modalities.
var outputModalities = []string{"text", "image", "embeddings", "audio", "video", "rerank", "speech", "transcription", "all"}

// models lists the catalog as GET /models filters, sorts and pages it; the
// API checks the values (an unknown one is its 400, shown in its words).
// "Go to model" is a jump to a model page by id.
func (c *Console) models(v *visit) error {
	q := v.r.URL.Query()
	if id := strings.TrimSpace(q.Get("id")); id != "" {
		author, slug, ok := strings.Cut(id, "/")
		if !ok || author == "" || slug == "" {
			return &client.Error{StatusCode: http.StatusBadRequest, Message: "A model id is author/slug, such as openai/gpt-4o"}
		}
		http.Redirect(v.w, v.r, "/console/models/"+url.PathEscape(author)+"/"+url.PathEscape(slug), http.StatusSeeOther)
		return nil
	}
	d := modelsData{Modality: q.Get("output_modalities"), Params: strings.TrimSpace(q.Get("supported_parameters")),
		Sort: q.Get("sort"), Modalities: outputModalities, Sorts: modelSorts}
	mq := client.ModelQuery{Sort: d.Sort, Offset: offsetParam(v.r), Limit: modelsPerPage}
	if d.Modality != "" {
		mq.OutputModalities = []string{d.Modality}
	}
	if d.Params != "" {
		for p := range strings.SplitSeq(d.Params, ",") {
			if p = strings.TrimSpace(p); p != "" {
				mq.SupportedParameters = append(mq.SupportedParameters, p)
			}
		}
	}
	page, err := v.api.QueryModels(v.ctx(), mq)
	if err != nil {
		return err
	}
	d.Models, d.Total = page.Models, page.Total
	d.Pager = offsetPager("/console/models", url.Values{"output_modalities": {d.Modality}, "supported_parameters": {d.Params}, "sort": {d.Sort}},
		mq.Offset, modelsPerPage, len(page.Models), page.Total)
	return v.show("models", "Models", "models", d)
}

type modelData struct {
	Model     client.Model
	Prices    []priceRow
	Overrides []overrideRow
	Endpoints []client.Endpoint
}

// priceRow is one price of a model, in words.
type priceRow struct {
	What, Price string
}

// overrideRow is a conditional price, its condition in words.
type overrideRow struct {
	When   string
	Prices []priceRow
}

func (c *Console) model(v *visit) error {
	id := v.r.PathValue("author") + "/" + v.r.PathValue("slug")
	m, err := v.api.GetModel(v.ctx(), id)
	if err != nil {
		return err
	}
	endpoints, err := v.api.ModelEndpoints(v.ctx(), id)
	if err != nil {
		return err
	}
	p := m.Pricing
	d := modelData{Model: *m, Endpoints: endpoints, Prices: priceRows([]priceRow{
		{"Prompt, per token", p.Prompt}, {"Completion, per token", p.Completion}, {"Per request", p.Request},
		{"Per input image", p.Image}, {"Per output image", p.ImageOutput}, {"Per image token", p.ImageToken},
		{"Audio input, per token", p.Audio}, {"Audio output, per token", p.AudioOutput},
		{"Cached audio input, per token", p.InputAudioCache}, {"Cache read, per token", p.InputCacheRead},
		{"Cache write (5 minutes), per token", p.InputCacheWrite}, {"Cache write (1 hour), per token", p.InputCacheWrite1h},
		{"Internal reasoning, per token", p.InternalReasoning}, {"Per web search", p.WebSearch},
	})}
	if p.Discount != nil && *p.Discount != 0 {
		d.Prices = append(d.Prices, priceRow{"Discount", strconv.FormatFloat(*p.Discount*100, 'f', -1, 64) + " % off every price above"})
	}
	for _, o := range p.Overrides {
		d.Overrides = append(d.Overrides, overrideRow{When: overrideCondition(o), Prices: priceRows([]priceRow{
			{"Prompt", o.Prompt}, {"Completion", o.Completion}, {"Audio input", o.Audio},
			{"Cached audio input", o.InputAudioCache}, {"Cache read", o.InputCacheRead},
			{"Cache write (5 minutes)", o.InputCacheWrite}, {"Cache write (1 hour)", o.InputCacheWrite1h},
		})})
	}
	return v.show("model", m.Name, "models", d)
}

// priceRows keeps the prices that are set, each also per million tokens
// where it is a price per token.
func priceRows(rows []priceRow) []priceRow {
	out := rows[:0]
	for _, r := range rows {
		if r.Price == "" {
			continue
		}
		f, err := strconv.ParseFloat(r.Price, 64)
		switch {
		case err != nil:
		case f < 0:
			r.Price = "depends on the model it routes to"
		case strings.Contains(r.What, "token") || !strings.HasPrefix(r.What, "Per"):
			r.Price = "$" + r.Price + " (" + usd(f*1e6) + " per million)"
		default:
			r.Price = "$" + r.Price
		}
		out = append(out, r)
	}
	return out
}

// overrideCondition says when a pricing override applies (all of its
// conditions at once), as the API defines them.
func overrideCondition(o client.PricingOverride) string {
	var parts []string
	if o.MinPromptTokens != nil {
		parts = append(parts, fmt.Sprintf("the request has more than %s prompt tokens", strconv.FormatFloat(*o.MinPromptTokens, 'f', -1, 64)))
	}
	if o.UTCStart != nil || o.UTCEnd != nil {
		start, end := 0.0, 2400.0
		if o.UTCStart != nil {
			start = *o.UTCStart
		}
		if o.UTCEnd != nil {
			end = *o.UTCEnd
		}
		parts = append(parts, fmt.Sprintf("the time is from %s up to %s UTC", clock(start), clock(end)))
	}
	if len(parts) == 0 {
		return "Always (replaces the prices above)"
	}
	return "When " + strings.Join(parts, " and ")
}

// clock writes an HHMM number as HH:MM.
func clock(hhmm float64) string {
	n := int(hhmm)
	return fmt.Sprintf("%02d:%02d", n/100, n%100)
}
