package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/aigateway/gateway/configs"
	"gopkg.in/yaml.v3"
)

// testSealingKey is a fixed BYOK sealing key for tests.
var testSealingKey = "dGVzdC1zZWFsaW5nLWtleS0zMi1ieXRlcy1sb25nISE="

func testGetenv(name string) string {
	if name == "GATEWAY_BYOK_ENCRYPTION_KEY" {
		return testSealingKey
	}
	return ""
}

// testConfig is the embedded default pointed at temp dirs and the shipped
// catalog.
func testConfig(t *testing.T) configs.Config {
	t.Helper()
	c := configs.Default()
	dir := t.TempDir()
	c.Metadata = configs.Metadata{Driver: "sqlite", DSN: filepath.Join(dir, "gateway.db")}
	c.Storage.FS.Dir = filepath.Join(dir, "files")
	c.Catalog.Path = "../../configs/models.yaml"
	c.Log.Level = "warn"
	return c
}

// writeConfig writes cfg as a configuration file and returns its path.
func writeConfig(t *testing.T, cfg configs.Config) string {
	t.Helper()
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
