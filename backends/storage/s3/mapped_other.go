//go:build !linux

package s3

// mapBuffer allocates on the Go heap where anonymous mappings are not
// used; see bufferPool for what that costs.
func mapBuffer(size int) ([]byte, error) { return make([]byte, size), nil }

// unmapBuffer leaves the buffer to the garbage collector.
func unmapBuffer([]byte) {}
