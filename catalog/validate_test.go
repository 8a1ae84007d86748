package catalog

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestBadFiles loads every file under testdata/bad and compares the complete
// list of problems with the golden NAME.want beside it (one problem a line).
// Each file breaks a family of rules; together they cover every rule of the
// loader. Refresh the golden files with `go test ./catalog -run TestBadFiles -update`
// and review the diff.
func TestBadFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bad files: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			c, err := FromBytes(data)
			if c != nil || err == nil {
				t.Fatal("loaded a bad file")
			}
			var le *LoadError
			if !errors.As(err, &le) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %T %v: want a *LoadError wrapping ErrInvalid", err, err)
			}
			got := strings.Join(le.Strings(), "\n") + "\n"
			golden := strings.TrimSuffix(path, ".yaml") + ".want"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("problems differ from %s\n--- got\n%s--- want\n%s", golden, got, want)
			}
			for _, p := range le.Problems {
				if p.Message == "" {
					t.Errorf("problem without message: %+v", p)
				}
			}
		})
	}
}

func TestValidFileLoads(t *testing.T) {
	c := loadTestCatalog(t)
	if c.Len() != 6 {
		t.Errorf("Len = %d, want 6", c.Len())
	}
	if len(c.Digest()) != 64 {
		t.Errorf("Digest = %q", c.Digest())
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := Load("testdata/does-not-exist.yaml"); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	big := make([]byte, MaxFileBytes+1)
	if _, err := FromBytes(big); !errors.Is(err, ErrInvalid) {
		t.Errorf("oversized file: %v", err)
	}
	err := &LoadError{Source: "x.yaml", Problems: []Problem{{Line: 3, Model: "a/b", Field: "name", Message: "bad"}}}
	if got, want := err.Error(), "catalog x.yaml: 1 problem: line 3: a/b: name: bad"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// TestProblemsCarryModelAndPath checks the parts of a problem separately, not
// only their rendering.
func TestProblemsCarryModelAndPath(t *testing.T) {
	data, err := os.ReadFile("testdata/bad/pricing.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = FromBytes(data)
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatal(err)
	}
	want := Problem{Line: 17, Model: "t/a", Field: "pricing.overrides[1].utc_start"}
	for _, p := range le.Problems {
		if p.Line == want.Line && p.Model == want.Model && p.Field == want.Field {
			return
		}
	}
	t.Errorf("no problem %+v among %v", want, le.Strings())
}

func TestParseID(t *testing.T) {
	tests := []struct {
		in   string
		want ID
		ok   bool
	}{
		{"openai/gpt-5", ID{"openai", "gpt-5", ""}, true},
		{"openai/gpt-oss-20b:free", ID{"openai", "gpt-oss-20b", "free"}, true},
		{"~anthropic/claude-sonnet-latest", ID{"~anthropic", "claude-sonnet-latest", ""}, true},
		{"qwen/qwen3.5-9b", ID{"qwen", "qwen3.5-9b", ""}, true},
		{"~a/b:free", ID{}, false},
		{"a/b:", ID{}, false},
		{"a/b/c", ID{}, false},
		{"a", ID{}, false},
		{"/b", ID{}, false},
		{"a/-b", ID{}, false},
		{"a b/c", ID{}, false},
		{"a/b:c:d", ID{}, false},
		{"~~a/b", ID{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := ParseID(tc.in)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("ParseID = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
			if ok && got.String() != tc.in {
				t.Errorf("String() = %q", got.String())
			}
		})
	}
}

func TestValidHHMM(t *testing.T) {
	for _, tc := range []struct {
		in int64
		ok bool
	}{{0, true}, {59, true}, {60, false}, {100, true}, {959, true}, {1000, true}, {2359, true}, {2360, false}, {2400, false}, {-1, false}, {99, false}} {
		if got := validHHMM(tc.in); got != tc.ok {
			t.Errorf("validHHMM(%d) = %v, want %v", tc.in, got, tc.ok)
		}
	}
}
