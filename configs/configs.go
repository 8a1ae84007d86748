package configs

import "embed"

// Shipped embeds the configuration files beside this one, so the binary
// runs on its embedded default even where the files are not on disk:
// gateway.yaml (the embedded default), production.example.yaml
// and models.yaml (the shipped catalog).
//
//go:embed *.yaml
var Shipped embed.FS

// DefaultConfigPath is where `gateway serve` looks for its configuration
// when --config is not given; when the file is absent the embedded copy of
// gateway.yaml is used.
const DefaultConfigPath = "configs/gateway.yaml"
