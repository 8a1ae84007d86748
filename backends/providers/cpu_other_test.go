//go:build !unix

package providers_test

import "time"

// processCPU is not told on this system.
func processCPU() (time.Duration, bool) { return 0, false }
