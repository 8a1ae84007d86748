package lowprio

import "golang.org/x/sys/unix"

// lowerThisThread sets the calling thread's niceness: on Linux, and only
// there, setpriority with a thread id applies to that thread alone.
// Raising the niceness needs no privilege.
func lowerThisThread(nice int) error {
	return unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), nice)
}

// onMainThread reports whether the calling thread is the process's first.
func onMainThread() bool { return unix.Gettid() == unix.Getpid() }
