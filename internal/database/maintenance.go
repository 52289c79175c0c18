package database

import (
	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"
	"log/slog"
)

// dailyOptimizeJobID is PocketBase's daily job (dashboard: Settings, Crons),
// which BindDailyOptimize replaces under the same id and schedule.
const dailyOptimizeJobID = "__pbDBOptimize__"

// BindDailyOptimize replaces PocketBase's daily database job, at midnight
// UTC: the same checkpoints and PRAGMA optimize, but data.db's checkpoint is
// PASSIVE instead of TRUNCATE.
//
// A TRUNCATE checkpoint holds the write lock while it waits for every reader
// of the WAL to finish. Litestream (docs/operations.md, Backups and
// recovery) keeps a read transaction open on data.db at all times, so under
// Litestream PocketBase's job would block every write for busy_timeout
// (10 s) each night, then give up. A PASSIVE checkpoint copies what no
// reader needs and waits for no one; the WAL file stays within
// journal_size_limit either way. auxiliary.db, which Litestream does not
// replicate, keeps PocketBase's TRUNCATE.
func BindDailyOptimize(app core.App, logger *slog.Logger) {
	app.Cron().MustAdd(dailyOptimizeJobID, "0 0 * * *", func() {
		run := func(db dbx.Builder, name, sql string) {
			if _, err := db.NewQuery(sql).Execute(); err != nil {
				logger.Warn("Daily database job failed", "db", name, "sql", sql, "error", err)
			}
		}
		run(app.NonconcurrentDB(), "data.db", "PRAGMA wal_checkpoint(PASSIVE)")
		run(app.AuxNonconcurrentDB(), "auxiliary.db", "PRAGMA wal_checkpoint(TRUNCATE)")
		run(app.NonconcurrentDB(), "data.db", "PRAGMA optimize")
	})
}
