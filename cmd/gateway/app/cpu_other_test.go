//go:build !unix

package app

import "time"

// processCPU is not told on this system.
func processCPU() (time.Duration, bool) { return 0, false }
