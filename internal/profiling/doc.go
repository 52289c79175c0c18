// Package profiling serves net/http/pprof and SQLite's memory counters on
// the loopback address in PETSTORE_PPROF, in a binary built with the tag
// pprof (`go run ./tools/bench -profile ...` builds one), with the mutex
// and block profiles sampled. Without the tag the package is empty: a normal
// build has no profiler at all.
package profiling
