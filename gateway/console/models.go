package console

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aigateway/gateway/client"
	"github.com/dustin/go-humanize"
)

// modelsPerPage is the page size of the model list.
const modelsPerPage = 50

// summaryLength is about how long a description is in the model list; the
// model's page has it whole.
const summaryLength = 160

type modelsData struct {
	Models []modelRow
	Total  int
	Pager  pager
	// The query, echoed into the form.
	Search, Modality, Params, Sort string
	Modalities                     []string
	Sorts                          []sortChoice
}

// modelRow is a model of the list with what it shows in words.
type modelRow struct {
	client.Model
	Context, Summary string
}

// sortChoice is a sort of GET /models and its name in words.
type sortChoice struct{ Value, Label string }

// modelSorts are the sorts of GET /models this gateway serves.
var modelSorts = []sortChoice{
	{"pricing-low-to-high", "Price, low to high"},
	{"pricing-high-to-low", "Price, high to low"},
	{"context-high-to-low", "Context length, longest first"},
	{"newest", "Newest first"},
	{"intelligence-high-to-low", "Intelligence index, high to low"},
	{"coding-high-to-low", "Coding index, high to low"},
	{"agentic-high-to-low", "Agentic index, high to low"},
	{"design-arena-elo-high-to-low", "Design Arena Elo, high to low"},
}

// outputModalities are the filters of output_modalities.
var outputModalities = []string{"text", "image", "embeddings", "audio", "video", "rerank", "speech", "transcription", "all"}

// models lists the catalog as GET /models filters, sorts and pages it; the
// API checks the values (an unknown one is its 400, shown in its words).
// "Go to model" is a jump to a model page by id.
//
// A name search (q) is the console's own: the API has none, so the page
// asks it for every model the filters select, in the sort asked for, and
// keeps those whose id or name holds the words, paging them itself: one
// in-process call that reads the whole catalog instead of a page of it
// (with the shipped catalog of 417 models, about 20 ms a search against
// 6 ms for a page of 50, on a shared 2-core machine), and no index of the
// console's own to keep in step with the catalog's reloads.
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
	d := modelsData{Search: strings.TrimSpace(q.Get("q")), Modality: q.Get("output_modalities"),
		Params: strings.TrimSpace(q.Get("supported_parameters")), Sort: q.Get("sort"),
		Modalities: outputModalities, Sorts: modelSorts}
	offset := offsetParam(v.r)
	mq := client.ModelQuery{Sort: d.Sort}
	if d.Search == "" {
		mq.Offset, mq.Limit = offset, modelsPerPage
	}
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
	models, total := page.Models, page.Total
	if d.Search != "" {
		models = matching(models, d.Search)
		total = len(models)
		models = models[min(offset, total):min(offset+modelsPerPage, total)]
	}
	d.Total = total
	for _, m := range models {
		d.Models = append(d.Models, modelRow{Model: m, Context: tokens(m.ContextLength), Summary: summary(m.Description, summaryLength)})
	}
	d.Pager = offsetPager("/console/models", url.Values{"q": {d.Search}, "output_modalities": {d.Modality},
		"supported_parameters": {d.Params}, "sort": {d.Sort}}, offset, modelsPerPage, len(models), total)
	return v.show("models", "Models", "models", d)
}

// matching keeps the models whose id or name holds every word of search,
// whatever the case, in their order: "claude haiku" finds "Anthropic:
// Claude 3 Haiku".
func matching(models []client.Model, search string) []client.Model {
	words := strings.Fields(strings.ToLower(search))
	out := models[:0]
	for _, m := range models {
		id, name := strings.ToLower(m.ID), strings.ToLower(m.Name)
		if !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(id, w) && !strings.Contains(name, w) }) {
			out = append(out, m)
		}
	}
	return out
}

// tokens is a token count in words: "256,000 tokens"; nil is unknown.
func tokens(n *int64) string {
	if n == nil || *n <= 0 {
		return ""
	}
	return humanize.Comma(*n) + " tokens"
}

type modelData struct {
	Model client.Model
	// Description is the model's description as plain paragraphs.
	Description []string
	// Context and MaxCompletion are the model's limits in words.
	Context, MaxCompletion string
	Prices                 []priceRow
	Overrides              []overrideRow
	Endpoints              []endpointRow
}

// endpointRow is an endpoint of the model with its limits in words.
type endpointRow struct {
	client.Endpoint
	Context, MaxCompletion string
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
	d := modelData{Model: *m, Description: paragraphs(m.Description), Context: tokens(m.ContextLength),
		MaxCompletion: tokens(m.TopProvider.MaxCompletionTokens)}
	for _, e := range endpoints {
		d.Endpoints = append(d.Endpoints, endpointRow{Endpoint: e, Context: tokens(&e.ContextLength), MaxCompletion: tokens(e.MaxCompletionTokens)})
	}
	d.Prices = priceRows([]priceRow{
		{"Prompt, per token", p.Prompt}, {"Completion, per token", p.Completion}, {"Per request", p.Request},
		{"Per input image", p.Image}, {"Per output image", p.ImageOutput}, {"Per image token", p.ImageToken},
		{"Audio input, per token", p.Audio}, {"Audio output, per token", p.AudioOutput},
		{"Cached audio input, per token", p.InputAudioCache}, {"Cache read, per token", p.InputCacheRead},
		{"Cache write (5 minutes), per token", p.InputCacheWrite}, {"Cache write (1 hour), per token", p.InputCacheWrite1h},
		{"Internal reasoning, per token", p.InternalReasoning}, {"Per web search", p.WebSearch},
	})
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

// paragraphs renders a description's Markdown as plain paragraphs: links
// and images become their text, emphasis, code and heading markers go,
// list items become paragraphs of their own. It writes no HTML (the
// template escapes what it gets), so a description can put no markup on
// the page; what it leaves is text a person reads as written.
func paragraphs(md string) []string {
	var (
		out []string
		cur []string
	)
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.Join(cur, " "))
			cur = nil
		}
	}
	for line := range strings.SplitSeq(strings.ReplaceAll(md, "\r\n", "\n"), "\n") {
		line = strings.TrimSpace(line)
		block, rest := blockMarker(line)
		if line == "" || block != "" {
			flush()
		}
		if text := plainInline(rest); text != "" {
			cur = append(cur, text)
		}
		if block == "#" {
			flush()
		}
	}
	flush()
	if n := len(out); n > 0 {
		out[n-1] = sourceEllipsis(out[n-1])
	}
	return out
}

// blockMarker splits a line's block marker (a heading's #s, a list item's
// bullet or number, a quote's >) from its text. block is "#" for a
// heading, "-" for any other block that starts a paragraph, "" for none.
func blockMarker(line string) (block, text string) {
	for strings.HasPrefix(line, ">") {
		line = strings.TrimSpace(line[1:])
		block = "-"
	}
	if hashes := len(line) - len(strings.TrimLeft(line, "#")); hashes >= 1 && hashes <= 6 &&
		(len(line) == hashes || line[hashes] == ' ') {
		return "#", strings.TrimSpace(strings.TrimRight(line[hashes:], "# "))
	}
	for _, bullet := range []string{"- ", "* ", "+ "} {
		if rest, ok := strings.CutPrefix(line, bullet); ok {
			return "-", "• " + strings.TrimSpace(rest)
		}
	}
	if digits := len(line) - len(strings.TrimLeft(line, "0123456789")); digits > 0 && digits < 10 &&
		len(line) > digits+1 && (line[digits] == '.' || line[digits] == ')') && line[digits+1] == ' ' {
		return "-", line[:digits] + ". " + strings.TrimSpace(line[digits+2:])
	}
	return block, line
}

// plainInline removes a line's inline Markdown: [text](url) and
// ![alt](url) keep their text (a link the source cut short loses its
// address too), <url> its address, `code` its text, and the markers of
// emphasis go where they flank a word, not inside one (snake_case stays).
func plainInline(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && strings.IndexByte("\\`*_{}[]()#+-.!<>~|", s[i+1]) >= 0:
			b.WriteByte(s[i+1])
			i += 2
		case c == '!' && i+1 < len(s) && s[i+1] == '[':
			i++
		case c == '[':
			text, next, ok := linkText(s, i)
			if !ok {
				b.WriteByte(c)
				i++
				continue
			}
			b.WriteString(plainInline(text))
			i = next
		case c == '<' && i+1 < len(s) && (strings.HasPrefix(s[i+1:], "http://") || strings.HasPrefix(s[i+1:], "https://")):
			if end := strings.IndexByte(s[i:], '>'); end > 0 {
				b.WriteString(s[i+1 : i+end])
				i += end + 1
				continue
			}
			b.WriteByte(c)
			i++
		case c == '`':
			i++
		case c == '*' || c == '_' || c == '~':
			run := i
			for run < len(s) && s[run] == c {
				run++
			}
			if c == '~' && run-i < 2 || !emphasis(s, i, run) {
				b.WriteString(s[i:run])
			}
			i = run
		default:
			b.WriteByte(c)
			i++
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// linkText reads a link at s[i] ('['): its text and where the text after
// it starts. A reference link [text][ref] keeps its text too. ok is false
// for a bracket that opens no link.
func linkText(s string, i int) (text string, next int, ok bool) {
	closing := strings.IndexByte(s[i:], ']')
	if closing < 0 {
		return "", 0, false
	}
	text, next = s[i+1:i+closing], i+closing+1
	if next >= len(s) || (s[next] != '(' && s[next] != '[') {
		return "", 0, false
	}
	end := byte(')')
	if s[next] == '[' {
		end = ']'
	}
	if stop := strings.IndexByte(s[next:], end); stop >= 0 {
		return text, next + stop + 1, true
	}
	// Cut short by the source: the address runs to the next space.
	if space := strings.IndexAny(s[next:], " \t"); space >= 0 {
		return text, next + space, true
	}
	return text, len(s), true
}

// emphasis reports whether the run s[i:j] of * _ or ~ marks emphasis, by
// CommonMark's flanking rules: it opens before a word or closes after
// one, but not both. Inside a word (snake_case, 2*3) or between spaces (a
// lone "*") it is text.
func emphasis(s string, i, j int) bool {
	prev, next := byte(' '), byte(' ') // the text's ends count as spaces
	if i > 0 {
		prev = s[i-1]
	}
	if j < len(s) {
		next = s[j]
	}
	opens := !isSpace(next) && (!isPunct(next) || isSpace(prev) || isPunct(prev))
	closes := !isSpace(prev) && (!isPunct(prev) || isSpace(next) || isPunct(next))
	return opens != closes
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' }

func isPunct(c byte) bool {
	return c < 0x80 && strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", c) >= 0
}

// sourceEllipsis writes the catalog's own mark of a description it cut
// ("...", after the last whole word) as one ellipsis after that word.
func sourceEllipsis(s string) string {
	trimmed := strings.TrimRight(s, ".…")
	if len(s)-len(trimmed) < len("…") || !strings.HasSuffix(s, "...") && !strings.HasSuffix(s, "…") {
		return s
	}
	return strings.TrimRight(trimmed, ",;:–— ") + "…"
}

// summary is the start of a description in plain text, cut at a word
// boundary near n characters with an ellipsis.
func summary(md string, n int) string {
	text := strings.Join(paragraphs(md), " ")
	if utf8.RuneCountInString(text) <= n {
		return text
	}
	cut := 0
	for i := range text {
		if utf8.RuneCountInString(text[:i]) > n {
			break
		}
		cut = i
	}
	head := text[:cut]
	if space := strings.LastIndexByte(head, ' '); space > 0 {
		head = head[:space]
	}
	return strings.TrimRight(head, ",;:–—-( •") + "…"
}
