package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// file is the decoded catalog file before validation.
type file struct {
	models []Model
	// lines[i] maps a field path inside models[i] to its line in the file.
	lines []map[string]int
	// broken[i] is set when models[i] did not decode cleanly; its semantic
	// checks wait until its decoding problems are fixed.
	broken []bool
	// latest maps "~author/name-latest" to a target id, in file order.
	latest []latestAlias
}

type latestAlias struct {
	alias, target string
	line          int
}

// decoder turns a yaml.Node tree into the catalog types strictly: unknown
// keys, duplicate keys, wrong scalar types, nulls where no null is allowed and
// missing required keys are all problems. Unlike yaml.v3's own decoder it
// keeps absent and null apart (Nullable), names the model and the field path
// of each problem, and never stops at the first one.
type decoder struct {
	problems []Problem
	model    string         // id of the model being decoded, "" outside models
	lines    map[string]int // path -> line, for the model being decoded
}

// nodeDecoder is implemented by types that decode themselves (Nullable).
type nodeDecoder interface {
	decodeNode(d *decoder, n *yaml.Node, path string, opts fieldOpts) bool
}

type fieldOpts struct {
	required bool
	nonempty bool
}

func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	d.problems = append(d.problems, Problem{Line: line, Model: d.model, Field: path, Message: fmt.Sprintf(format, args...)})
}

// parseFile decodes the whole catalog file. It returns a nil file when the
// file cannot be read as a catalog at all; otherwise the file holds what
// could be decoded, with broken marking the models that had problems.
func parseFile(data []byte) (*file, []Problem) {
	d := &decoder{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, []Problem{{Message: "the file is empty: a models list is required"}}
		}
		return nil, []Problem{{Message: strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, []Problem{{Line: extra.Line, Message: "the file must hold a single YAML document"}}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		d.fail(root, "", "the file must be a mapping with a models list")
		return nil, d.problems
	}
	f := &file{}
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if seen[k.Value] {
			d.fail(k, k.Value, "duplicate key")
			continue
		}
		seen[k.Value] = true
		switch k.Value {
		case "models":
			d.models(v, f)
		case "latest":
			d.latest(v, f)
		default:
			d.fail(k, k.Value, "unknown key (the file has models and latest)")
		}
	}
	if !seen["models"] {
		d.fail(root, "models", "required key is missing")
	}
	if f.models == nil {
		return nil, d.problems
	}
	return f, d.problems
}

func (d *decoder) models(n *yaml.Node, f *file) {
	if n.Kind == yaml.AliasNode {
		d.fail(n, "models", "YAML aliases are not supported")
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.fail(n, "models", "must be a list of models")
		return
	}
	f.models = make([]Model, len(n.Content))
	f.lines = make([]map[string]int, len(n.Content))
	f.broken = make([]bool, len(n.Content))
	for i, item := range n.Content {
		d.model = entryName(item, i)
		d.lines = map[string]int{"": item.Line}
		before := len(d.problems)
		d.value(item, reflect.ValueOf(&f.models[i]).Elem(), "", fieldOpts{})
		f.lines[i] = d.lines
		f.broken[i] = len(d.problems) > before
	}
	d.model, d.lines = "", nil
}

// entryName names models[i] in problems: its id when it has a usable one.
func entryName(n *yaml.Node, i int) string {
	if n.Kind == yaml.MappingNode {
		for j := 0; j+1 < len(n.Content); j += 2 {
			k, v := n.Content[j], n.Content[j+1]
			if k.Value == "id" && v.Kind == yaml.ScalarNode && v.ShortTag() != "!!null" && v.Value != "" {
				return v.Value
			}
		}
	}
	return fmt.Sprintf("models[%d]", i)
}

func (d *decoder) latest(n *yaml.Node, f *file) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.fail(n, "latest", "must be a mapping of ~author/name-latest to a model id")
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		path := "latest." + k.Value
		switch {
		case k.Kind != yaml.ScalarNode:
			d.fail(k, "latest", "keys must be strings")
			continue
		case seen[k.Value]:
			d.fail(k, path, "duplicate key")
			continue
		case v.Kind != yaml.ScalarNode || v.ShortTag() == "!!null" || v.Value == "":
			d.fail(v, path, "must be a model id")
			continue
		}
		seen[k.Value] = true
		f.latest = append(f.latest, latestAlias{alias: k.Value, target: v.Value, line: k.Line})
	}
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// value decodes n into v and reports whether it succeeded.
func (d *decoder) value(n *yaml.Node, v reflect.Value, path string, opts fieldOpts) bool {
	if n.Kind == yaml.AliasNode {
		// Aliases would let a small file expand into a huge tree; the
		// catalog is plain data and gains nothing from them.
		d.fail(n, path, "YAML aliases are not supported: write the value out")
		return false
	}
	if d.lines != nil {
		d.lines[path] = n.Line
	}
	if v.CanAddr() {
		if nd, ok := v.Addr().Interface().(nodeDecoder); ok {
			return nd.decodeNode(d, n, path, opts)
		}
	}
	null := isNull(n)
	switch v.Kind() {
	case reflect.Pointer:
		if null {
			v.SetZero()
			return true
		}
		p := reflect.New(v.Type().Elem())
		if !d.value(n, p.Elem(), path, opts) {
			return false
		}
		v.Set(p)
		return true
	case reflect.Slice:
		if null {
			v.SetZero()
			return true
		}
		if n.Kind != yaml.SequenceNode {
			d.fail(n, path, "must be a list")
			return false
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		ok := true
		for i, item := range n.Content {
			ok = d.value(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i), fieldOpts{nonempty: true}) && ok
		}
		v.Set(s)
		return ok
	case reflect.Struct:
		if null {
			d.fail(n, path, "must not be null")
			return false
		}
		return d.mapping(n, v, path)
	}
	if null {
		d.fail(n, path, "must not be null")
		return false
	}
	if n.Kind != yaml.ScalarNode {
		d.fail(n, path, "must be %s", kindName(v.Kind()))
		return false
	}
	switch v.Kind() {
	case reflect.String:
		// Any scalar is taken verbatim: an unquoted price (0.000002) or date
		// (2026-12-31) keeps exactly the text written.
		if opts.nonempty && n.Value == "" {
			d.fail(n, path, "must not be empty")
			return false
		}
		v.SetString(n.Value)
		return true
	case reflect.Bool:
		b, err := strconv.ParseBool(n.Value)
		if n.ShortTag() != "!!bool" || err != nil {
			d.fail(n, path, "must be true or false, not %q", n.Value)
			return false
		}
		v.SetBool(b)
		return true
	case reflect.Int64:
		var i int64
		if n.ShortTag() != "!!int" || n.Decode(&i) != nil {
			d.fail(n, path, "must be an integer, not %q", n.Value)
			return false
		}
		v.SetInt(i)
		return true
	case reflect.Float64:
		var f float64
		tag := n.ShortTag()
		if (tag != "!!int" && tag != "!!float") || n.Decode(&f) != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			d.fail(n, path, "must be a finite number, not %q", n.Value)
			return false
		}
		v.SetFloat(f)
		return true
	}
	panic(fmt.Sprintf("catalog: decoder does not handle %s", v.Type()))
}

func kindName(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int64:
		return "an integer"
	case reflect.Float64:
		return "a number"
	}
	return k.String()
}

func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string) bool {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "must be a mapping")
		return false
	}
	fields := structFields(v.Type())
	seen := make(map[string]bool, len(n.Content)/2)
	ok := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		name := k.Value
		p := joinPath(path, name)
		if k.Kind != yaml.ScalarNode {
			d.fail(k, path, "keys must be strings")
			ok = false
			continue
		}
		if seen[name] {
			d.fail(k, p, "duplicate key")
			ok = false
			continue
		}
		seen[name] = true
		f, known := fields.byName[name]
		if !known {
			d.fail(k, p, "unknown field")
			ok = false
			continue
		}
		ok = d.value(val, v.Field(f.index), p, f.opts) && ok
	}
	for _, f := range fields.list {
		if f.opts.required && !seen[f.name] {
			d.fail(n, joinPath(path, f.name), "required field is missing")
			ok = false
		}
	}
	return ok
}

type field struct {
	name  string
	index int
	opts  fieldOpts
}

type fieldSet struct {
	list   []field
	byName map[string]field
}

var fieldCache sync.Map // reflect.Type -> *fieldSet

// structFields lists the keys a struct accepts: the yaml tag name when there
// is one (catalog-only keys), else the json name.
func structFields(t reflect.Type) *fieldSet {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.(*fieldSet)
	}
	fs := &fieldSet{byName: map[string]field{}}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if name == "" {
			name, _, _ = strings.Cut(sf.Tag.Get("json"), ",")
		}
		if name == "" || name == "-" || !sf.IsExported() {
			continue
		}
		var opts fieldOpts
		for _, o := range strings.Split(sf.Tag.Get("catalog"), ",") {
			switch o {
			case "required":
				opts.required = true
			case "nonempty":
				opts.nonempty = true
			}
		}
		f := field{name: name, index: i, opts: opts}
		fs.list = append(fs.list, f)
		fs.byName[name] = f
	}
	actual, _ := fieldCache.LoadOrStore(t, fs)
	return actual.(*fieldSet)
}

func (n *Nullable[T]) decodeNode(d *decoder, node *yaml.Node, path string, opts fieldOpts) bool {
	if isNull(node) {
		*n = Null[T]()
		return true
	}
	var v T
	if !d.value(node, reflect.ValueOf(&v).Elem(), path, opts) {
		return false
	}
	*n = Some(v)
	return true
}
