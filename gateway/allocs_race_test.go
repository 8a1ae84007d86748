//go:build race

package gateway

// raceAllocs is what the race detector's instrumentation adds to the
// lookup path (a value it makes escape); make test runs with -race.
const raceAllocs = 1
