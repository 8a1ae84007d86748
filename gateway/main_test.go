package gateway

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// waitingTests is how many parallel tests of this package may run at once
// unless -test.parallel says otherwise.
const waitingTests = 8

// TestMain lets more of this package's parallel tests run at once than the
// default of -parallel (GOMAXPROCS). They hold real sockets open until a
// real deadline passes (body and idle timeouts, lingering closes), so they
// wait rather than compute, and on a two-core machine the default queued
// their waits two at a time. An explicit -test.parallel is kept.
func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		if err := flag.Set("test.parallel", strconv.Itoa(max(waitingTests, runtime.GOMAXPROCS(0)))); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
