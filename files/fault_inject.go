//go:build faultinject

package files

import (
	"os"
	"syscall"
)

// Builds with the faultinject tag (tests of crash recovery only) can be
// told to die where a crash costs most: the upload's bytes are stored and
// its record is not yet written.
func init() {
	if os.Getenv("GATEWAY_FAULT") == "kill-before-commit" {
		beforeCommit = func() {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // never carry on to the commit
		}
	}
}
