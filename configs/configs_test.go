package configs_test

import (
	"io/fs"
	"reflect"
	"strings"
	"testing"

	"github.com/aigateway/gateway/catalog"
	"github.com/aigateway/gateway/configs"
)

// exampleEnv gives the variables the example files reference.
func exampleEnv(name string) string {
	return map[string]string{
		"DATABASE_URL": "postgres://gateway@postgres:5432/gateway",
		"REDIS_URL":    "redis://redis:6379/0",
		"FILES_BUCKET": "files",
	}[name]
}

// TestEveryShippedFileLoads loads and validates every file in configs/ (as
// embedded in the binary, which is what runs when the files are absent).
func TestEveryShippedFileLoads(t *testing.T) {
	entries, err := fs.ReadDir(configs.Shipped, ".")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, e := range entries {
		name := e.Name()
		data, err := configs.Shipped.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) {
			switch {
			case name == "models.yaml":
				c, err := catalog.FromBytes(data)
				if err != nil {
					t.Fatalf("the shipped catalog does not load: %v", err)
				}
				if c.Len() < 40 {
					t.Errorf("the shipped catalog has %d models, want at least 40", c.Len())
				}
			case strings.HasSuffix(name, ".yaml"):
				if _, err := configs.Parse(data, exampleEnv); err != nil {
					t.Fatalf("%s does not validate: %v", name, err)
				}
			default:
				t.Fatalf("unexpected file %s in configs/", name)
			}
		})
		seen++
	}
	if seen < 3 {
		t.Fatalf("found %d config files, want gateway.yaml, production.example.yaml and models.yaml", seen)
	}
}

// TestEmbeddedDefaultIsTheDocumentedOne pins what `make run` starts.
func TestEmbeddedDefaultIsTheDocumentedOne(t *testing.T) {
	data, _ := configs.Shipped.ReadFile("gateway.yaml")
	cfg, err := configs.Parse(data, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Listen != "127.0.0.1:8080" || cfg.Metadata.Driver != "sqlite" || cfg.Storage.Backend != "fs" || cfg.Redis.Enabled() {
		t.Errorf("embedded default is not SQLite + local disk + in-process limits on 127.0.0.1:8080: %+v", cfg)
	}
	if !reflect.DeepEqual(normalize(cfg), normalize(configs.Default())) {
		t.Errorf("gateway.yaml and configs.Default() disagree:\nfile:    %+v\ndefault: %+v", cfg, configs.Default())
	}
}

// normalize treats an empty and a nil list alike.
func normalize(c configs.Config) configs.Config {
	if len(c.Server.TrustedProxies) == 0 {
		c.Server.TrustedProxies = nil
	}
	return c
}
