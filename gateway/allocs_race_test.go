//go:build race

package gateway

// raceAllocs is what the race detector's instrumentation adds to the
// lookup path (values it makes escape); make test runs with -race. It is
// 2, not 1: under the detector the same build counts 11 or 12 allocations
// from one process to the next (seen on one commit, run after run), so
// this bound tells nothing about the code; the strict bound is the one of
// the builds without -race (maxLookupAllocs, 10).
const raceAllocs = 2
