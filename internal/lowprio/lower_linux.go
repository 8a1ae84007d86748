package lowprio

import "golang.org/x/sys/unix"

// lowerThisThread makes the calling thread by nicer than it is, up to 19,
// the lowest priority: relative, so that under a process started with
// nice the work still ranks below the requests, and a lowering is never a
// raising (which would need a privilege). On Linux, and only there,
// setpriority with a thread id applies to that thread alone.
func lowerThisThread(by int) error {
	tid := unix.Gettid()
	// The raw system call returns 20 - nice, keeping clear of -1.
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
	if err != nil {
		return err
	}
	return unix.Setpriority(unix.PRIO_PROCESS, tid, min(20-prio+by, 19))
}

// onMainThread reports whether the calling thread is the process's first.
func onMainThread() bool { return unix.Gettid() == unix.Getpid() }
