package main

import (
	"context"
	"strconv"
	"strings"

	"modernc.org/sqlite"
)

// logDBCacheKiB is the page cache of each connection to auxiliary.db, the
// request log's database, in KiB: SQLite's own default. PocketBase gives every
// connection 32 MB (cache_size(-32000)), which for a table that is only
// appended to fills with pages never read again: after a burst of requests,
// the log's connections held about 60 MB of the server's RSS (README,
// Performance).
const logDBCacheKiB = 2000

// SQLite's driver runs the hook on every new connection, after PocketBase's
// pragmas (the DSN's), so this setting wins for the log database only.
func init() {
	sqlite.RegisterConnectionHook(func(conn sqlite.ExecQuerierContext, dsn string) error {
		if !strings.Contains(dsn, "auxiliary.db") {
			return nil
		}
		_, err := conn.ExecContext(context.Background(), "PRAGMA cache_size = -"+strconv.Itoa(logDBCacheKiB), nil)
		return err
	})
}
