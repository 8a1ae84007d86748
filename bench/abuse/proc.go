package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// procStats reads the gateway's descriptors and memory from /proc. With no
// pid every figure is -1 (shown as n/a).
type procStats struct{ pid int }

func (p procStats) check() error {
	if p.pid == 0 {
		return nil
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/fd", p.pid)); err != nil {
		return fmt.Errorf("-pid %d: %w", p.pid, err)
	}
	return nil
}

// fds is the number of open descriptors of the process.
func (p procStats) fds() int {
	if p.pid == 0 {
		return -1
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/fd", p.pid))
	if err != nil {
		return -1
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return -1
	}
	return len(names)
}

// rssKiB is the resident set size of the process (VmRSS), in KiB.
func (p procStats) rssKiB() int {
	if p.pid == 0 {
		return -1
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.pid))
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest) // "12345 kB"
		if len(fields) == 0 {
			return -1
		}
		n, err := strconv.Atoi(fields[0])
		if err != nil {
			return -1
		}
		return n
	}
	return -1
}

// raiseFileLimit lifts this process's descriptor limit to its hard limit
// (every stalled connection holds one here too) and returns it.
func raiseFileLimit() (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, fmt.Errorf("reading the descriptor limit: %w", err)
	}
	if l.Cur < l.Max {
		l.Cur = l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			return 0, fmt.Errorf("raising the descriptor limit to %d: %w", l.Max, err)
		}
	}
	return l.Cur, nil
}
