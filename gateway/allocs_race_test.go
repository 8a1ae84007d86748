//go:build race

package gateway

// raceAllocs is what the race detector's instrumentation adds to the
// lookup path (values it makes escape); make test runs with -race. Seen as
// 1, the same in every process; the strict bound is the one of the builds
// without -race (maxLookupAllocs).
const raceAllocs = 1
