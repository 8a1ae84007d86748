package catalog

import (
	"cmp"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// Sort orders a model list. The zero Sort is by id.
type Sort string

// The sorts of GET /api/v1/models. Models without the value sort last; ties
// keep the order by id.
const (
	SortByID             Sort = ""
	SortPriceLowToHigh   Sort = "pricing-low-to-high"
	SortPriceHighToLow   Sort = "pricing-high-to-low"
	SortContextHighToLow Sort = "context-high-to-low"
	SortNewest           Sort = "newest"
	SortIntelligence     Sort = "intelligence-high-to-low"
	SortCoding           Sort = "coding-high-to-low"
	SortAgentic          Sort = "agentic-high-to-low"
	SortDesignArena      Sort = "design-arena-elo-high-to-low"
)

var sorts = []Sort{SortPriceLowToHigh, SortPriceHighToLow, SortContextHighToLow, SortNewest,
	SortIntelligence, SortCoding, SortAgentic, SortDesignArena}

// trafficSorts need data of the traffic this gateway does not route.
var trafficSorts = map[string]bool{"throughput-high-to-low": true, "latency-low-to-high": true,
	"most-popular": true, "top-weekly": true}

// QueryError names the query parameter at fault.
type QueryError struct {
	Param, Problem string
}

func (e *QueryError) Error() string { return e.Param + ": " + e.Problem }

// ParseSort reads the sort parameter.
func ParseSort(s string) (Sort, error) {
	if slices.Contains(sorts, Sort(s)) {
		return Sort(s), nil
	}
	if trafficSorts[s] {
		return "", &QueryError{"sort", s + " needs traffic data this gateway does not have"}
	}
	return "", &QueryError{"sort", "unknown sort " + strconv.Quote(s)}
}

// ParseOutputModalities reads output_modalities: a comma-separated list of
// modalities, or "all" (nil: no filter).
func ParseOutputModalities(s string) ([]string, error) {
	if s == "all" {
		return nil, nil
	}
	var out []string
	for _, m := range strings.Split(s, ",") {
		m = strings.TrimSpace(m)
		if !outputModalities[m] {
			return nil, &QueryError{"output_modalities", "unknown modality " + strconv.Quote(m)}
		}
		out = append(out, m)
	}
	return out, nil
}

// ParseParameters reads supported_parameters, a comma-separated list of
// parameter names each model must support; a name no model of c supports
// is refused rather than silently matching nothing.
func (c *Catalog) ParseParameters(s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if _, ok := c.byParam[p]; !ok {
			return nil, &QueryError{"supported_parameters", "unknown parameter " + strconv.Quote(p)}
		}
		out = append(out, p)
	}
	return out, nil
}

// Query selects models from the list.
type Query struct {
	// OutputModalities: a model must output one of them; nil: any.
	OutputModalities []string
	// Parameters: a model must support all of them.
	Parameters []string
	Sort       Sort
	Offset     int
	Limit      int // 0: no limit
	// Allow, when set, keeps only the entries it accepts (a key's model
	// allowlist).
	Allow func(*Entry) bool
}

// TextOnly is the default modality filter of GET /api/v1/models.
var TextOnly = []string{"text"}

// bitset has one bit per listed model.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (b bitset) set(i int)        { b[i/64] |= 1 << (i % 64) }
func (b bitset) has(i int32) bool { return b[i/64]&(1<<(i%64)) != 0 }
func (b bitset) and(o bitset) bitset {
	for i := range b {
		b[i] &= o[i]
	}
	return b
}
func (b bitset) or(o bitset) bitset {
	for i := range b {
		b[i] |= o[i]
	}
	return b
}
func (b bitset) count() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

// listed is one model of the list with what queries need, computed once
// per catalog version.
type listed struct {
	entry  *Entry
	raw    []byte // the model's JSON, service shape
	openAI []byte // with "object":"model" and "owned_by"
}

// indexList builds the filters and orders of the list.
func (c *Catalog) indexList(models []*Model) {
	n := len(c.listed)
	c.byModality, c.byParam = map[string]bitset{}, map[string]bitset{}
	for i, m := range models {
		for _, o := range m.Architecture.OutputModalities {
			if c.byModality[o] == nil {
				c.byModality[o] = newBitset(n)
			}
			c.byModality[o].set(i)
		}
		for _, p := range m.SupportedParameters {
			if c.byParam[p] == nil {
				c.byParam[p] = newBitset(n)
			}
			c.byParam[p].set(i)
		}
	}
	c.orders = map[Sort][]int32{}
	for _, s := range sorts {
		key := sortKey(s)
		order := make([]int32, n)
		for i := range order {
			order[i] = int32(i)
		}
		// Higher first for every sort but the ascending price; missing
		// last; the list is by id, so a stable sort keeps ties by id.
		slices.SortStableFunc(order, func(a, b int32) int {
			ka, oka := key(models[a])
			kb, okb := key(models[b])
			switch {
			case !oka || !okb:
				return cmpBool(okb, oka)
			case s == SortPriceLowToHigh:
				return cmp.Compare(ka, kb)
			default:
				return cmp.Compare(kb, ka)
			}
		})
		c.orders[s] = order
	}
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// sortKey is the value a sort orders by, and whether the model has it.
func sortKey(s Sort) func(*Model) (float64, bool) {
	index := func(pick func(*IndexEntry) *float64) func(*Model) (float64, bool) {
		return func(m *Model) (float64, bool) {
			if m.Benchmarks == nil || m.Benchmarks.IndexBenchmark == nil || pick(m.Benchmarks.IndexBenchmark) == nil {
				return 0, false
			}
			return *pick(m.Benchmarks.IndexBenchmark), true
		}
	}
	switch s {
	case SortPriceLowToHigh, SortPriceHighToLow:
		return func(m *Model) (float64, bool) {
			p, err1 := strconv.ParseFloat(m.Pricing.Prompt, 64)
			c, err2 := strconv.ParseFloat(m.Pricing.Completion, 64)
			if err1 != nil || err2 != nil || p < 0 || c < 0 { // a router's price depends on the routed model
				return 0, false
			}
			return (p + c) / 2, true
		}
	case SortContextHighToLow:
		return func(m *Model) (float64, bool) {
			if m.ContextLength == nil {
				return 0, false
			}
			return float64(*m.ContextLength), true
		}
	case SortNewest:
		return func(m *Model) (float64, bool) { return float64(m.Created), true }
	case SortIntelligence:
		return index(func(e *IndexEntry) *float64 { return e.IntelligenceIndex })
	case SortCoding:
		return index(func(e *IndexEntry) *float64 { return e.CodingIndex })
	case SortAgentic:
		return index(func(e *IndexEntry) *float64 { return e.AgenticIndex })
	case SortDesignArena:
		return func(m *Model) (float64, bool) {
			if m.Benchmarks == nil || len(m.Benchmarks.ArenaBenchmark) == 0 {
				return 0, false
			}
			best := m.Benchmarks.ArenaBenchmark[0].Rating
			for _, a := range m.Benchmarks.ArenaBenchmark[1:] {
				best = max(best, a.Rating)
			}
			return best, true
		}
	}
	return func(*Model) (float64, bool) { return 0, true }
}

// Select returns the models q selects, as pre-encoded JSON (the OpenAI
// shape when openAI is set), and how many match before paging. The filters
// and orders were computed with the catalog version: a query is bit
// operations and one walk of an order.
func (c *Catalog) Select(q Query, openAI bool) (page [][]byte, total int) {
	match := c.match(q)
	order := c.orders[q.Sort]
	limit := q.Limit
	if limit <= 0 {
		limit = len(c.listed)
	}
	page = make([][]byte, 0, min(limit, len(c.listed)))
	for k := range len(c.listed) {
		i := int32(k)
		if order != nil {
			i = order[k]
		}
		if !match.has(i) {
			continue
		}
		if q.Allow != nil && !q.Allow(c.listed[i].entry) {
			continue
		}
		if total >= q.Offset && len(page) < limit {
			if openAI {
				page = append(page, c.listed[i].openAI)
			} else {
				page = append(page, c.listed[i].raw)
			}
		}
		total++
	}
	return page, total
}

// Count is how many models q selects, paging aside.
func (c *Catalog) Count(q Query) int {
	if q.Allow == nil {
		return c.match(q).count()
	}
	_, total := c.Select(Query{OutputModalities: q.OutputModalities, Parameters: q.Parameters, Allow: q.Allow, Limit: 1}, false)
	return total
}

func (c *Catalog) match(q Query) bitset {
	n := len(c.listed)
	match := newBitset(n)
	if q.OutputModalities == nil {
		for i := range n {
			match.set(i)
		}
	} else {
		for _, m := range q.OutputModalities {
			if b := c.byModality[m]; b != nil {
				match.or(b)
			}
		}
	}
	for _, p := range q.Parameters {
		if b := c.byParam[p]; b != nil {
			match.and(b)
		} else {
			clear(match)
		}
	}
	return match
}
