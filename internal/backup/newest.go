package backup

import (
	"log/slog"
	"time"

	"github.com/pocketbase/pocketbase/core"
)

// LastTime reads, at each scrape, the time of the newest of
// PocketBase's backups: the newest modification time in its backups
// filesystem (pb_data/backups, or S3 when Settings, Backups, S3 is on), as
// Unix seconds. A backup made by the dashboard, the API or the auto backups'
// cron, or uploaded, is a file there once whole: PocketBase writes the zip
// in a temporary directory, then uploads it. 0 when there is none or the
// list cannot be read (logged): the alert on backups takes both as overdue.
func LastTime(app core.App, log *slog.Logger) func() float64 {
	return func() float64 {
		newest, err := newestBackup(app)
		if err != nil {
			log.Warn("A metric could not be read", "metric", "petstore_backup_last_success_timestamp_seconds", "error", err)
			return 0
		}
		if newest.IsZero() {
			return 0
		}
		return float64(newest.UnixMilli()) / 1000
	}
}

// newestBackup is the modification time of the newest backup, zero without
// one.
func newestBackup(app core.App) (time.Time, error) {
	fsys, err := app.NewBackupsFilesystem()
	if err != nil {
		return time.Time{}, err
	}
	defer fsys.Close()
	backups, err := fsys.List("")
	if err != nil {
		return time.Time{}, err
	}
	var newest time.Time
	for _, b := range backups {
		if b.ModTime.After(newest) {
			newest = b.ModTime
		}
	}
	return newest, nil
}
