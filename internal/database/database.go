// Package database opens petstore's SQLite connections: PocketBase's own
// pragmas with a page cache that bounds memory, and the read pool's size.
// main and the test app pass both to PocketBase's configuration
// (DBConnect, DataMaxIdleConns), so tests run with what production runs.
// BindDailyOptimize keeps PocketBase's daily checkpoint from blocking writes
// under Litestream.
package database

import (
	"strconv"

	"github.com/pocketbase/dbx"
	_ "modernc.org/sqlite" // the driver PocketBase uses
)

// PageCacheKiB is what each connection, to data.db or auxiliary.db, adds to
// SQLite's page cache.
//
// SQLite as modernc.org/sqlite builds it (SQLITE_ENABLE_MEMORY_MANAGEMENT)
// keeps the pages of all connections in one group, bounded by the sum of
// their cache_size, and moves pages between connections through the group's
// LRU: PocketBase's 32 MB per connection, times the connections open under
// load, bounds nothing. Each page also takes an 8 KiB slot of the allocator
// beneath (modernc.org/memory). At 512 KiB, the idle read pool bounds the
// group at ReadPoolIdleConns × 512 KiB, and a busy connection may still use
// more than its share.
const PageCacheKiB = 512

// ReadPoolIdleConns is how many idle connections the read pool
// (app.ConcurrentDB()) keeps. Prepared statements live on connections: a
// connection the pool closes takes them along, and a new one loads the
// schema and prepares them again, so the pool keeps as many as a busy server
// uses at once. Each holds at most its share of the page cache.
const ReadPoolIdleConns = 32

// pragmas are PocketBase's (core.DefaultDBConnect), busy_timeout first, with
// the page cache above.
var pragmas = "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=journal_size_limit(200000000)" +
	"&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(ON)&_pragma=temp_store(MEMORY)" +
	"&_pragma=cache_size(-" + strconv.Itoa(PageCacheKiB) + ")"

// Connect opens the database at dbPath: PocketBase's core.DBConnectFunc.
func Connect(dbPath string) (*dbx.DB, error) {
	return dbx.Open("sqlite", dbPath+pragmas)
}
