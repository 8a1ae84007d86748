package catalog

import (
	"errors"
	"os"
	"testing"
)

// FuzzFromBytes: no catalog file panics the loader; a refusal is a
// *LoadError listing problems; an accepted file serves every id it holds.
func FuzzFromBytes(f *testing.F) {
	for _, path := range []string{"testdata/valid.yaml", "testdata/bad/enums.yaml"} {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("models: []\n"))
	f.Add([]byte("models:\n  - id: a/b\n    pricing: {prompt: \"1e9\"}\n"))
	f.Add([]byte("latest: {\"~a/b-latest\": a/b}\nmodels: []\n"))
	f.Add([]byte("models: &x [*x]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := FromBytes(data)
		if err != nil {
			var le *LoadError
			if !errors.As(err, &le) || !errors.Is(err, ErrInvalid) || len(le.Problems) == 0 {
				t.Fatalf("refused with %T %v, want a *LoadError listing problems", err, err)
			}
			return
		}
		for author, slugs := range c.index {
			for slug, e := range slugs {
				if got, ok := c.Lookup(author, slug); !ok || got != e {
					t.Fatalf("indexed %s/%s but cannot look it up", author, slug)
				}
			}
		}
	})
}
