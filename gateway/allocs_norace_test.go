//go:build !race

package gateway

const raceAllocs = 0
