package s3

import (
	"fmt"
	"syscall"
)

// mapBuffer returns size bytes of anonymous memory outside the Go heap,
// zeroed and committed page by page as they are first written.
func mapBuffer(size int) ([]byte, error) {
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, fmt.Errorf("s3: map a part buffer of %d bytes: %w", size, err)
	}
	return b, nil
}

// unmapBuffer gives a buffer of mapBuffer back to the system.
func unmapBuffer(b []byte) {
	if err := syscall.Munmap(b); err != nil {
		// Only a slice that mapBuffer did not return can fail here.
		panic(fmt.Sprintf("s3: unmap a part buffer: %v", err))
	}
}
