// Package layout holds the test of the repository's shape: the top-level
// folders the design card names, the direction of imports between them
// (from the top floor down, never back up, so no circle can close), and the
// rooms that alone may import the cloud SDKs, the database drivers and
// go-redis. It has no code of its own; `go test ./internal/layout` reads the
// imports of every Go file in the module and says which rule a file breaks.
package layout
