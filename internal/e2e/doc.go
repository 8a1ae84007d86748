// Package e2e holds the black-box suites: a whole gateway built by
// cmd/gateway/app exactly as `gateway serve` builds it, behind an httptest
// server or as real processes, against real servers (PostgreSQL, Redis, an
// S3-compatible server, a GCS emulator) started by `make test`. They prove
// the wiring, the real servers and the HTTP contract; each rule is tested in
// the package that owns it.
package e2e
