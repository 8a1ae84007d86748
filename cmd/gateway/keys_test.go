package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestKeysCreateService: --service makes a key of role service without a
// workspace; it cannot be combined with --management or --workspace.
func TestKeysCreateService(t *testing.T) {
	path := writeConfig(t, testConfig(t))
	ctx := context.Background()
	var out bytes.Buffer
	if err := run(ctx, []string{"keys", "create", "--config", path, "--name", "indexer", "--user", "alice", "--service"}, testGetenv, &out); err != nil {
		t.Fatalf("keys create --service: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !strings.Contains(out.String(), "role: service\n") || strings.Contains(out.String(), "workspace:") ||
		!strings.HasPrefix(lines[len(lines)-1], "sk-gw-") {
		t.Errorf("output:\n%s", out.String())
	}
	for _, extra := range [][]string{{"--management"}, {"--workspace", "default"}} {
		args := append([]string{"keys", "create", "--config", path, "--name", "x", "--user", "alice", "--service"}, extra...)
		if err := run(ctx, args, testGetenv, &bytes.Buffer{}); err == nil {
			t.Errorf("keys create --service %v succeeded", extra)
		}
	}
}
