// Package configs embeds the shipped configuration files, so the binary runs
// on its embedded default even where the files are not on disk.
package configs

import "embed"

// Files holds gateway.yaml (the embedded default), production.example.yaml
// and models.yaml (the shipped catalog).
//
//go:embed *.yaml
var Files embed.FS

// DefaultConfigPath is where `gateway serve` looks for its configuration
// when --config is not given; when the file is absent the embedded copy of
// gateway.yaml is used.
const DefaultConfigPath = "configs/gateway.yaml"
