package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// MaxFileBytes bounds the size of a catalog file: a catalog of every public
// model is about 1 MB, so anything far larger is a mistake, not a catalog.
const MaxFileBytes = 32 << 20

// Entry is one answer of the catalog: what GET /api/v1/model/{author}/{slug}
// returns for one id, alias or variant. Entries are immutable and shared by
// all requests; never modify one or anything it points to.
type Entry struct {
	// ID is the id the body returns ("data.id"). For a slug alias it is the
	// target's id; for a variant served from its base, the base id with the
	// variant suffix.
	ID string
	// BaseID is the concrete model behind the entry, without variant and
	// after alias resolution ("anthropic/claude-sonnet-5" for
	// "~anthropic/claude-sonnet-latest" and for "anthropic/claude-sonnet-5:batch").
	// Model allowlists are checked against it.
	BaseID string
	// Model is the model as served (its ID equals ID); use it for pricing.
	Model *Model
	// Body is the complete response body, {"data":{...}}, encoded once per
	// catalog version.
	Body []byte
	// ETag is a strong entity tag of Body, quoted ("\"<hex>\""), ready for
	// the ETag header and for comparing with If-None-Match.
	ETag string
	// OpenAIBody is the model as OpenAI's models.retrieve reads it: the
	// bare object with "object":"model" and "owned_by" (the author), and
	// OpenAIETag its tag.
	OpenAIBody []byte
	OpenAIETag string
	// EndpointsBody answers GET /api/v1/models/{author}/{slug}/endpoints
	// for this entry; EndpointsETag is its tag.
	EndpointsBody []byte
	EndpointsETag string
}

// Catalog is one immutable version of the model catalog, with every response
// pre-encoded. It is safe for concurrent use; a new file yields a new
// Catalog (see Source).
type Catalog struct {
	// index maps author -> slug[:variant] -> entry, so that a lookup of the
	// two path segments needs no concatenation (and no allocation).
	index  map[string]map[string]*Entry
	list   *Entry
	models int

	// The list of GET /api/v1/models: every model of the file by id, its
	// filters (one bitset per output modality and per supported
	// parameter) and one order per sort, all computed once per version.
	listed     []listed
	byModality map[string]bitset
	byParam    map[string]bitset
	orders     map[Sort][]int32
	// defaultList is the unfiltered answer (text models), pre-encoded in
	// the service shape [0] and OpenAI's [1].
	defaultList [2]*Entry
	digest      string
	notes       []Problem
}

// Load reads, validates and indexes the catalog file at path. A file that
// breaks any rule is refused with a *LoadError listing every problem.
func Load(path string) (*Catalog, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return build(data, path)
}

// FromBytes builds a catalog from the contents of a catalog file, such as the
// copy embedded in the binary. Errors are as for Load.
func FromBytes(data []byte) (*Catalog, error) { return build(data, "") }

func build(data []byte, source string) (*Catalog, error) {
	c, _, err := compile(data, source)
	return c, err
}

// compile is build that also returns the decoded file (for tests).
func compile(data []byte, source string) (*Catalog, *file, error) {
	if len(data) > MaxFileBytes {
		return nil, nil, &LoadError{Source: source, Problems: []Problem{{Message: fmt.Sprintf("the file is larger than %d bytes", MaxFileBytes)}}}
	}
	f, problems := parseFile(data)
	var notes []Problem
	if f != nil {
		var invalid []Problem
		invalid, notes = validateFile(f)
		problems = append(problems, invalid...)
		slices.SortStableFunc(problems, func(a, b Problem) int { return a.Line - b.Line })
	}
	if len(problems) > 0 {
		return nil, nil, &LoadError{Source: source, Problems: problems}
	}
	sum := sha256.Sum256(data)
	c := &Catalog{
		index:  map[string]map[string]*Entry{},
		models: len(f.models),
		digest: hex.EncodeToString(sum[:]),
		notes:  notes,
	}
	if err := c.fill(f); err != nil {
		return nil, nil, err
	}
	return c, f, nil
}

// Notes are what the file was accepted with but an operator should look at
// (the loader logs each as a warning), in the form of problems.
func (c *Catalog) Notes() []Problem { return c.notes }

// fill pre-encodes an entry for every name the catalog answers to. The file
// has been validated, so ids parse and references resolve.
func (c *Catalog) fill(f *file) error {
	models := make([]*Model, len(f.models))
	for i := range f.models {
		m := &f.models[i]
		if m.Links.Details == "" {
			id, _ := ParseID(m.ID)
			m.Links.Details = detailsPath(id.Base())
		}
		models[i] = m
	}
	slices.SortFunc(models, func(a, b *Model) int { return strings.Compare(a.ID, b.ID) })

	byID := make(map[string]*Entry, len(models))
	// variantsOf maps a base id to its variant entries (own and listed).
	variantsOf := map[string][]*Entry{}
	list := bytes.NewBufferString(`{"data":[`)
	for i, m := range models {
		id, _ := ParseID(m.ID)
		base := id.Base()
		if m.AliasTarget != nil {
			t, _ := ParseID(m.AliasTarget.Slug)
			base = t.Base()
		}
		e, raw, err := newEntry(m, base)
		if err != nil {
			return err
		}
		if i > 0 {
			list.WriteByte(',')
		}
		list.Write(raw)
		c.listed = append(c.listed, listed{entry: e, raw: raw, openAI: openAIObject(raw, id)})
		byID[m.ID] = e
		c.put(id, e)
		if id.Variant != "" {
			variantsOf[id.Base()] = append(variantsOf[id.Base()], e)
		}
	}
	list.WriteString("]}")
	c.list = &Entry{Body: list.Bytes(), ETag: etag(list.Bytes())}
	c.indexList(models)
	for i, openAI := range []bool{false, true} {
		page, total := c.Select(Query{OutputModalities: TextOnly}, openAI)
		body := EncodeList(page, total, "", openAI)
		c.defaultList[i] = &Entry{Body: body, ETag: etag(body)}
	}

	// Variants listed on a base model, unless the catalog has an entry of
	// its own for that exact id (which wins).
	for _, m := range models {
		for _, v := range m.Variants {
			vid := m.ID + ":" + v
			if _, own := byID[vid]; own {
				continue
			}
			served := *m
			served.ID = vid
			served.Aliases, served.Variants = nil, nil
			e, _, err := newEntry(&served, m.ID)
			if err != nil {
				return err
			}
			id, _ := ParseID(vid)
			c.put(id, e)
			variantsOf[m.ID] = append(variantsOf[m.ID], e)
		}
	}

	// Slug aliases answer exactly as their target, variants included.
	for _, m := range models {
		for _, a := range m.Aliases {
			aid, _ := ParseID(a)
			c.put(aid, byID[m.ID])
			for _, ve := range variantsOf[m.ID] {
				vid, _ := ParseID(ve.ID)
				aid.Variant = vid.Variant
				// An entry of the file with exactly this id wins.
				if _, taken := c.Lookup(aid.Author, aid.Slug+":"+aid.Variant); !taken {
					c.put(aid, ve)
				}
			}
		}
	}

	// Tilde aliases of the latest map: the target with alias_target added.
	for _, l := range f.latest {
		t := byID[l.target]
		served := *t.Model
		served.AliasTarget = &ModelAliasTarget{Slug: t.Model.ID, Name: t.Model.Name}
		e, _, err := newEntry(&served, t.BaseID)
		if err != nil {
			return err
		}
		lid, _ := ParseID(l.alias)
		c.put(lid, e)
	}
	return nil
}

func (c *Catalog) put(id ID, e *Entry) {
	slugs := c.index[id.Author]
	if slugs == nil {
		slugs = map[string]*Entry{}
		c.index[id.Author] = slugs
	}
	key := id.Slug
	if id.Variant != "" {
		key += ":" + id.Variant
	}
	slugs[key] = e
}

// newEntry encodes m and returns the entry and the model's bare JSON.
func newEntry(m *Model, base string) (*Entry, []byte, error) {
	raw, err := encodeJSON(m)
	if err != nil {
		return nil, nil, fmt.Errorf("catalog: encode %s: %w", m.ID, err)
	}
	body := make([]byte, 0, len(raw)+len(`{"data":}`))
	body = append(body, `{"data":`...)
	body = append(body, raw...)
	body = append(body, '}')
	id, _ := ParseID(m.ID)
	openAI := openAIObject(raw, id)
	endpoints, err := encodeEndpoints(m)
	if err != nil {
		return nil, nil, err
	}
	return &Entry{ID: m.ID, BaseID: base, Model: m, Body: body, ETag: etag(body),
		OpenAIBody: openAI, OpenAIETag: etag(openAI),
		EndpointsBody: endpoints, EndpointsETag: etag(endpoints)}, raw, nil
}

// openAIObject adds OpenAI's "object" and "owned_by" (the author, without
// a tilde) to a model's JSON object.
func openAIObject(raw []byte, id ID) []byte {
	owner, _ := json.Marshal(strings.TrimPrefix(id.Author, "~"))
	out := make([]byte, 0, len(raw)+len(owner)+40)
	out = append(out, `{"object":"model","owned_by":`...)
	out = append(out, owner...)
	out = append(out, ',')
	return append(out, raw[1:]...)
}

// endpointsAnswer is the body of the endpoints route.
type endpointsAnswer struct {
	Data struct {
		ID           string        `json:"id"`
		Name         string        `json:"name"`
		Created      int64         `json:"created"`
		Description  string        `json:"description"`
		Architecture endpointsArch `json:"architecture"`
		Endpoints    []Endpoint    `json:"endpoints"`
	} `json:"data"`
}

type endpointsArch struct {
	Modality         *string  `json:"modality"`
	InputModalities  []string `json:"input_modalities"`
	OutputModalities []string `json:"output_modalities"`
	Tokenizer        *string  `json:"tokenizer"`
	InstructType     *string  `json:"instruct_type"`
}

// encodeEndpoints is the endpoints answer of m: its declared endpoints, each
// naming the served model, or an empty list.
func encodeEndpoints(m *Model) ([]byte, error) {
	var a endpointsAnswer
	d := &a.Data
	d.ID, d.Name, d.Created = m.ID, m.Name, m.Created
	if m.Description != nil {
		d.Description = *m.Description
	}
	d.Architecture = endpointsArch{Modality: m.Architecture.Modality, InputModalities: m.Architecture.InputModalities,
		OutputModalities: m.Architecture.OutputModalities}
	if m.Architecture.Tokenizer != "" {
		d.Architecture.Tokenizer = &m.Architecture.Tokenizer
	}
	if v, ok := m.Architecture.InstructType.Get(); ok {
		d.Architecture.InstructType = &v
	}
	d.Endpoints = make([]Endpoint, len(m.Endpoints))
	for i, e := range m.Endpoints {
		e.ModelID, e.ModelName = m.ID, m.Name
		d.Endpoints[i] = e
	}
	b, err := encodeJSON(a)
	if err != nil {
		return nil, fmt.Errorf("catalog: encode the endpoints of %s: %w", m.ID, err)
	}
	return b, nil
}

// EncodeList is the body of a model list: {"data":[...],"links":{"next":
// next or null},"total_count":total}, with "object":"list" first in
// OpenAI's shape.
func EncodeList(page [][]byte, total int, next string, openAI bool) []byte {
	var b bytes.Buffer
	_, _ = WriteList(&b, page, total, next, openAI) // a bytes.Buffer does not fail
	return b.Bytes()
}

// WriteList writes EncodeList's body to w piece by piece: the models'
// pre-encoded JSON goes out as it is, never copied into one buffer.
func WriteList(w io.Writer, page [][]byte, total int, next string, openAI bool) (int64, error) {
	var n int64
	write := func(p []byte) error {
		k, err := w.Write(p)
		n += int64(k)
		return err
	}
	head := []byte(`{"data":[`)
	if openAI {
		head = []byte(`{"object":"list","data":[`)
	}
	if err := write(head); err != nil {
		return n, err
	}
	for i, p := range page {
		if i > 0 {
			if err := write(comma); err != nil {
				return n, err
			}
		}
		if err := write(p); err != nil {
			return n, err
		}
	}
	tail := make([]byte, 0, 64+len(next))
	tail = append(tail, `],"links":{"next":`...)
	if next == "" {
		tail = append(tail, "null"...)
	} else {
		tail = strconv.AppendQuote(tail, next)
	}
	tail = append(tail, `},"total_count":`...)
	tail = strconv.AppendInt(tail, int64(total), 10)
	tail = append(tail, '}')
	return n, write(tail)
}

var comma = []byte{','}

// encodeJSON marshals v without HTML escaping (the bodies are JSON, never
// embedded in HTML) and without the encoder's trailing newline.
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func etag(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// Lookup resolves the two decoded path segments of
// GET /api/v1/model/{author}/{slug} (slug may carry ":variant"; author may
// start with "~"). It applies every resolution rule — exact id, own variant
// entry, variant listed on the base, slug alias, tilde alias — from a table
// built at load time, so it is two map reads and does not allocate.
func (c *Catalog) Lookup(author, slug string) (*Entry, bool) {
	e, ok := c.index[author][slug]
	return e, ok
}

// LookupID is Lookup for a whole id: "author/slug[:variant]" or
// "~author/name". It does not allocate.
func (c *Catalog) LookupID(id string) (*Entry, bool) {
	author, slug, ok := strings.Cut(id, "/")
	if !ok {
		return nil, false
	}
	return c.Lookup(author, slug)
}

// List returns the pre-encoded body {"data":[...]} with every model of the
// file (own variant and ~ entries included, listed variants and aliases
// not), sorted by id. Only Body and ETag are set.
func (c *Catalog) List() *Entry { return c.list }

// DefaultList returns the pre-encoded answer of an unfiltered
// GET /api/v1/models: the models with text output, by id, with links and
// total_count; in OpenAI's shape when openAI is set. Only Body and ETag
// are set.
func (c *Catalog) DefaultList(openAI bool) *Entry {
	if openAI {
		return c.defaultList[1]
	}
	return c.defaultList[0]
}

// Len returns the number of models in the file the catalog was built from.
func (c *Catalog) Len() int { return c.models }

// Digest returns the hex SHA-256 of the file the catalog was built from, to
// tell versions apart in logs.
func (c *Catalog) Digest() string { return c.digest }
