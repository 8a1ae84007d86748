//go:build !linux

package lowprio

import (
	"errors"
	"fmt"
	"runtime"
)

// lowerThisThread does nothing here: other systems' setpriority applies to
// the whole process, which would lower the request path with the work.
func lowerThisThread(int) error {
	return fmt.Errorf("lowering one thread's priority on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

// onMainThread is false here: no thread is lowered, so none needs to avoid
// the main one.
func onMainThread() bool { return false }
