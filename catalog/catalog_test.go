package catalog

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestResolve covers every resolution rule on testdata/valid.yaml.
func TestResolve(t *testing.T) {
	c := loadTestCatalog(t)
	tests := []struct {
		name, author, slug string
		found              bool
		id, base           string // Entry.ID (= data.id) and Entry.BaseID
		details            string // data.links.details
		aliasTarget        string // data.alias_target.slug, "" when absent
		same               string // an id that must answer with the very same entry
	}{
		{name: "exact id", author: "acme", slug: "rocket", found: true,
			id: "acme/rocket", base: "acme/rocket", details: "/api/v1/models/acme/rocket-20260101/endpoints"},
		{name: "own variant entry wins over the listed variant", author: "acme", slug: "rocket:free", found: true,
			id: "acme/rocket:free", base: "acme/rocket", details: "/api/v1/models/acme/rocket/endpoints"},
		{name: "variant listed on the base", author: "acme", slug: "rocket:nitro", found: true,
			id: "acme/rocket:nitro", base: "acme/rocket", details: "/api/v1/models/acme/rocket-20260101/endpoints"},
		{name: "another listed variant", author: "acme", slug: "rocket:floor", found: true,
			id: "acme/rocket:floor", base: "acme/rocket", details: "/api/v1/models/acme/rocket-20260101/endpoints"},
		{name: "variant not offered", author: "acme", slug: "rocket:exacto"},
		{name: "variant of a model without variants", author: "beta", slug: "voice:nitro"},
		{name: "variant of an unknown model", author: "acme", slug: "nothing:free"},
		{name: "empty variant", author: "acme", slug: "rocket:"},
		{name: "slug alias", author: "acme", slug: "rocket-classic", found: true,
			id: "acme/rocket", base: "acme/rocket", details: "/api/v1/models/acme/rocket-20260101/endpoints", same: "acme/rocket"},
		{name: "dated slug alias", author: "acme", slug: "rocket-20260101", found: true,
			id: "acme/rocket", base: "acme/rocket", same: "acme/rocket", details: "/api/v1/models/acme/rocket-20260101/endpoints"},
		{name: "slug alias with a listed variant", author: "acme", slug: "rocket-classic:nitro", found: true,
			id: "acme/rocket:nitro", base: "acme/rocket", same: "acme/rocket:nitro", details: "/api/v1/models/acme/rocket-20260101/endpoints"},
		{name: "slug alias with an own variant", author: "acme", slug: "rocket-classic:free", found: true,
			id: "acme/rocket:free", base: "acme/rocket", same: "acme/rocket:free", details: "/api/v1/models/acme/rocket/endpoints"},
		{name: "tilde alias from latest", author: "~beta", slug: "voice-latest", found: true,
			id: "beta/voice", base: "beta/voice", details: "/api/v1/models/beta/voice/endpoints", aliasTarget: "beta/voice"},
		{name: "tilde alias to a variant entry", author: "~acme", slug: "free-latest", found: true,
			id: "acme/rocket:free", base: "acme/rocket", details: "/api/v1/models/acme/rocket/endpoints", aliasTarget: "acme/rocket:free"},
		{name: "tilde alias with its own record", author: "~acme", slug: "rocket-latest", found: true,
			id: "~acme/rocket-latest", base: "acme/rocket", details: "/api/v1/models/~acme/rocket-latest/endpoints", aliasTarget: "acme/rocket"},
		{name: "tilde alias with a variant", author: "~acme", slug: "rocket-latest:free"},
		{name: "router", author: "acme", slug: "router", found: true,
			id: "acme/router", base: "acme/router", details: "/api/v1/models/acme/router/endpoints"},
		{name: "unknown author", author: "nobody", slug: "rocket"},
		{name: "unknown slug", author: "acme", slug: "jet"},
		{name: "ids are case-sensitive", author: "Acme", slug: "Rocket"},
		{name: "empty author", author: "", slug: "rocket"},
		{name: "empty slug", author: "acme", slug: ""},
		{name: "tilde without the tilde", author: "acme", slug: "rocket-latest"},
		{name: "slash inside the slug", author: "acme", slug: "rocket/x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, ok := c.Lookup(tc.author, tc.slug)
			if ok != tc.found {
				t.Fatalf("found = %v, want %v", ok, tc.found)
			}
			if !ok {
				if e != nil {
					t.Error("a failed lookup returned an entry")
				}
				return
			}
			if byID, ok := c.LookupID(tc.author + "/" + tc.slug); !ok || byID != e {
				t.Error("LookupID disagrees with Lookup")
			}
			if e.ID != tc.id || e.BaseID != tc.base || e.Model.ID != tc.id {
				t.Errorf("ID, BaseID, Model.ID = %q, %q, %q; want %q, %q, %q", e.ID, e.BaseID, e.Model.ID, tc.id, tc.base, tc.id)
			}
			var body struct {
				Data map[string]json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(e.Body, &body); err != nil {
				t.Fatal(err)
			}
			var got struct {
				ID    string `json:"id"`
				Links struct {
					Details string `json:"details"`
				} `json:"links"`
				AliasTarget *ModelAliasTarget `json:"alias_target"`
			}
			raw, _ := json.Marshal(body.Data)
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			if got.ID != tc.id {
				t.Errorf("data.id = %q, want %q", got.ID, tc.id)
			}
			if got.Links.Details != tc.details {
				t.Errorf("links.details = %q, want %q", got.Links.Details, tc.details)
			}
			switch {
			case tc.aliasTarget == "" && got.AliasTarget != nil:
				t.Errorf("alias_target = %+v, want none", got.AliasTarget)
			case tc.aliasTarget != "" && (got.AliasTarget == nil || got.AliasTarget.Slug != tc.aliasTarget || got.AliasTarget.Name == ""):
				t.Errorf("alias_target = %+v, want slug %q", got.AliasTarget, tc.aliasTarget)
			}
			for _, k := range gatewayOnlyKeys {
				if _, leaked := body.Data[k]; leaked {
					t.Errorf("gateway-only key %q in the body", k)
				}
			}
			if !strings.HasPrefix(e.ETag, `"`) || !strings.HasSuffix(e.ETag, `"`) || strings.HasPrefix(e.ETag, `W/`) || len(e.ETag) < 10 {
				t.Errorf("ETag %q is not a strong quoted tag", e.ETag)
			}
			if tc.same != "" {
				if other, _ := c.LookupID(tc.same); other != e {
					t.Errorf("does not share the entry of %s", tc.same)
				}
			}
		})
	}
}

// TestETags: every served name has its own body and ETag, except aliases,
// which answer exactly as their target (see TestResolve).
func TestETags(t *testing.T) {
	c := loadTestCatalog(t)
	tags := map[string]string{}
	for _, id := range []string{"acme/rocket", "acme/rocket:nitro", "acme/rocket:floor", "acme/rocket:free",
		"~acme/rocket-latest", "~beta/voice-latest", "beta/voice", "~acme/free-latest"} {
		e, ok := c.LookupID(id)
		if !ok {
			t.Fatal(id)
		}
		for other, tag := range tags {
			if tag == e.ETag {
				t.Errorf("%s and %s share ETag %s", id, other, tag)
			}
		}
		tags[id] = e.ETag
	}
	// The same file gives the same tags: a restart or a no-op reload does
	// not invalidate client caches.
	again := loadTestCatalog(t)
	for id, tag := range tags {
		if e, _ := again.LookupID(id); e.ETag != tag {
			t.Errorf("%s: ETag changed across loads of the same file", id)
		}
	}
}

func TestList(t *testing.T) {
	c := loadTestCatalog(t)
	l := c.List()
	var body struct {
		Data []map[string]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(l.Body, &body); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range body.Data {
		var id string
		if err := json.Unmarshal(m["id"], &id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		for _, k := range gatewayOnlyKeys {
			if _, leaked := m[k]; leaked {
				t.Errorf("%s: gateway-only key %q listed", id, k)
			}
		}
		e, _ := c.LookupID(id)
		raw, _ := json.Marshal(m)
		var fromEntry struct{ Data map[string]json.RawMessage }
		_ = json.Unmarshal(e.Body, &fromEntry)
		want, _ := json.Marshal(fromEntry.Data)
		if string(raw) != string(want) {
			t.Errorf("%s: listed differently from its lookup", id)
		}
	}
	want := []string{"acme/rocket", "acme/rocket:free", "acme/router", "beta/embed", "beta/voice", "~acme/rocket-latest"}
	if !slices.Equal(ids, want) {
		t.Errorf("listed %v, want %v (every model of the file, sorted by id)", ids, want)
	}
	if !strings.HasPrefix(l.ETag, `"`) || l.ETag == "" {
		t.Errorf("list ETag %q", l.ETag)
	}
}

// TestGoldenBodies pins the exact bytes of a few responses.
func TestGoldenBodies(t *testing.T) {
	c := loadTestCatalog(t)
	for _, id := range []string{"acme/rocket:nitro", "~beta/voice-latest", "acme/rocket:free"} {
		t.Run(id, func(t *testing.T) {
			e, ok := c.LookupID(id)
			if !ok {
				t.Fatal("not found")
			}
			name := strings.NewReplacer("/", "_", ":", "_", "~", "tilde_").Replace(id)
			golden := filepath.Join("testdata", "golden", name+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, append(e.Body, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if string(e.Body)+"\n" != string(want) {
				t.Errorf("body differs from %s\ngot  %s\nwant %s", golden, e.Body, want)
			}
		})
	}
}

// TestLookupDoesNotAllocate: a lookup of a plain id, of a variant and of an
// alias is two map reads.
func TestLookupDoesNotAllocate(t *testing.T) {
	c := loadTestCatalog(t)
	for _, tc := range []struct{ author, slug string }{
		{"acme", "rocket"}, {"acme", "rocket:nitro"}, {"~beta", "voice-latest"}, {"acme", "missing"},
	} {
		if n := testing.AllocsPerRun(1000, func() { c.Lookup(tc.author, tc.slug) }); n != 0 {
			t.Errorf("Lookup(%q, %q): %v allocs, want 0", tc.author, tc.slug, n)
		}
	}
	if _, ok := c.LookupID("acme"); ok {
		t.Error("LookupID of an id without a slash")
	}
	if n := testing.AllocsPerRun(1000, func() { c.LookupID("acme/rocket") }); n != 0 {
		t.Errorf("LookupID: %v allocs, want 0", n)
	}
}
