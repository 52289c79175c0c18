package main

import (
	"context"
	"strconv"

	"modernc.org/sqlite"
)

// pageCacheKiB is what each SQLite connection, to data.db or auxiliary.db,
// adds to the page cache, in KiB.
//
// SQLite as modernc.org/sqlite builds it (SQLITE_ENABLE_MEMORY_MANAGEMENT)
// keeps the pages of all connections in one group, bounded by the sum of
// their cache_size, and moves pages between connections through the group's
// LRU. PocketBase opens every connection with 32 MB (cache_size(-32000)):
// with 30 to 60 connections open under load that is no bound at all, and the
// server's RSS grew with every page ever written. The request log's one
// writing connection held 36 MB while its own cache_size was 2 MB, because
// the budget it drew on was every other connection's. The allocator beneath
// (modernc.org/memory) also rounds each page (4 KiB plus SQLite's header) up
// to 8 KiB. At 512 KiB, 32 idle read connections bound the group at 16 MB,
// about 40 MB of RSS, and a busy connection may still use more than its
// share (README, Performance).
const pageCacheKiB = 512

// SQLite's driver runs the hook on every new connection, after PocketBase's
// pragmas (the DSN's), so this setting wins.
func init() {
	sqlite.RegisterConnectionHook(func(conn sqlite.ExecQuerierContext, _ string) error {
		_, err := conn.ExecContext(context.Background(), "PRAGMA cache_size = -"+strconv.Itoa(pageCacheKiB), nil)
		return err
	})
}
