package e2e

import (
	"fmt"
	"os"
	"testing"
)

// TestMain gives the run one directory for the gateway binaries the
// process tests share (builtBinary), and removes it afterwards.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gateway-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
