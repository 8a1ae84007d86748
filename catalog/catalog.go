package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
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
	digest string
	notes  []Problem
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
		byID[m.ID] = e
		c.put(id, e)
		if id.Variant != "" {
			variantsOf[id.Base()] = append(variantsOf[id.Base()], e)
		}
	}
	list.WriteString("]}")
	c.list = &Entry{Body: list.Bytes(), ETag: etag(list.Bytes())}

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
	return &Entry{ID: m.ID, BaseID: base, Model: m, Body: body, ETag: etag(body)}, raw, nil
}

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

// List returns the pre-encoded body of GET /api/v1/models: {"data":[...]}
// with every model of the file (own variant and ~ entries included, listed
// variants and aliases not), sorted by id. Only Body and ETag are set.
func (c *Catalog) List() *Entry { return c.list }

// Len returns the number of models in the file the catalog was built from.
func (c *Catalog) Len() int { return c.models }

// Digest returns the hex SHA-256 of the file the catalog was built from, to
// tell versions apart in logs.
func (c *Catalog) Digest() string { return c.digest }
