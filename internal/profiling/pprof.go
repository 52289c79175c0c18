//go:build pprof

package profiling

import (
	"log"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
)

// The mutex and block profiles sample a contention event in mutexFraction,
// and a blocking event per blockRate nanoseconds blocked: enough to see who
// waits on whom under load, at a cost a CPU profile barely shows.
const (
	mutexFraction = 10
	blockRate     = 10_000
)

// PETSTORE_PPROF must be a loopback address: the profiler is never exposed.
func init() {
	addr := os.Getenv("PETSTORE_PPROF")
	if addr == "" {
		return
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		log.Fatalf("PETSTORE_PPROF=%q: want a loopback HOST:PORT", addr)
	}
	runtime.SetMutexProfileFraction(mutexFraction)
	runtime.SetBlockProfileRate(blockRate)
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/sqlite", serveSQLiteMemory)
	go func() { log.Println(http.ListenAndServe(addr, mux)) }()
}
