// Package database opens petstore's SQLite connections: PocketBase's own
// pragmas with a page cache that bounds memory, and the read pool's size.
// main and the test app pass both to PocketBase's configuration
// (DBConnect, DataMaxOpenConns and DataMaxIdleConns), so tests run with what
// production runs. It also checkpoints the main database's WAL away from its
// writer (Checkpointer), which the service starts (but a cluster's leader,
// where Litestream checkpoints), and BindDailyOptimize
// keeps PocketBase's daily checkpoint from blocking writes under Litestream.
package database

import (
	"path/filepath"
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
// beneath (modernc.org/memory). At 512 KiB, the read pool bounds the group
// at ReadPoolConns × 512 KiB, and a busy connection may still use more than
// its share.
const PageCacheKiB = 512

// ReadPoolConns is how many connections the read pool (app.ConcurrentDB())
// opens at most, and keeps open while idle.
//
// Each connection holds its share of the page cache, its copy of the
// schema and its prepared statements, and fills its cache as the tables it
// reads grow: with PocketBase's 120, which 100 concurrent requests open, the
// process grows with the table. Two CPUs run a few queries at a time; a
// request that finds every connection busy waits for one. Prepared
// statements live on connections: a connection the pool closes takes them
// along, and a new one loads the schema and prepares them again, so the pool
// keeps every connection it opens.
const ReadPoolConns = 32

// pragmas are PocketBase's (core.DefaultDBConnect), busy_timeout first, with
// the page cache above, and transactions that take the write lock when they
// begin (BEGIN IMMEDIATE). Only the write connection runs transactions, and
// each one writes; one that began deferred, read, and then found another
// process's commit in between could not write at all (SQLITE_BUSY_SNAPSHOT,
// "database is locked (517)", which no busy timeout waits out), whereas
// BEGIN IMMEDIATE waits for the lock under busy_timeout. Instances and the
// command line share a data directory, so that happens.
var pragmas = "?_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=journal_size_limit(200000000)" +
	"&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(ON)&_pragma=temp_store(MEMORY)" +
	"&_pragma=cache_size(-" + strconv.Itoa(PageCacheKiB) + ")"

// DataFile is the name of PocketBase's main database in its data directory.
const DataFile = "data.db"

// Connect opens the database at dbPath: PocketBase's core.DBConnectFunc.
// Connections to the main database do not checkpoint its WAL when they
// commit: a Checkpointer does (checkpoint.go).
func Connect(dbPath string) (*dbx.DB, error) {
	holdAllocatorPages()
	if filepath.Base(dbPath) == DataFile {
		return dbx.Open("sqlite", dbPath+pragmas+"&_pragma=wal_autocheckpoint(0)")
	}
	return dbx.Open("sqlite", dbPath+pragmas)
}
