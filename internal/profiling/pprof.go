//go:build pprof

package profiling

import (
	"log"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
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
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/sqlite", serveSQLiteMemory)
	go func() { log.Println(http.ListenAndServe(addr, mux)) }()
}
