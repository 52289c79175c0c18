//go:build pprof

package profiling

import (
	"fmt"
	"net/http"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// The profiling build also counts SQLite's memory, which lives outside the Go
// heap (modernc.org/libc's allocator) and so is not in any Go profile. The
// driver is built with SQLITE_DEFAULT_MEMSTATUS=0; the counters must be on
// before the first connection opens.
func init() {
	tls := libc.NewTLS()
	defer tls.Close()
	if rc := sqlite3.Xsqlite3_config(tls, sqlite3.SQLITE_CONFIG_MEMSTATUS, libc.NewVaList(int32(1))); rc != sqlite3.SQLITE_OK {
		panic(fmt.Sprintf("sqlite3_config(SQLITE_CONFIG_MEMSTATUS): %d", rc))
	}
}

// serveSQLiteMemory writes SQLite's memory in use and its page cache (now
// and at their peak) and what the allocator beneath has mapped, in bytes.
// The allocator's figure needs the build tag memory.counters.
func serveSQLiteMemory(w http.ResponseWriter, _ *http.Request) {
	tls := libc.NewTLS()
	defer tls.Close()
	buf := tls.Alloc(16)
	defer tls.Free(16)
	status := func(op int32) (now, peak int64) {
		sqlite3.Xsqlite3_status64(tls, op, buf, buf+8, 0)
		return libc.AtomicLoadNInt64(buf, 0), libc.AtomicLoadNInt64(buf+8, 0)
	}
	used, usedPeak := status(sqlite3.SQLITE_STATUS_MEMORY_USED)
	cache, cachePeak := status(sqlite3.SQLITE_STATUS_PAGECACHE_OVERFLOW)
	fmt.Fprintf(w, "sqlite_memory_used %d\nsqlite_memory_used_peak %d\nsqlite_page_cache %d\nsqlite_page_cache_peak %d\nallocator_mapped %d\n",
		used, usedPeak, cache, cachePeak, libc.MemStat().Bytes)
}
