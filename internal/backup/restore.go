package backup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/archive"
	"github.com/pocketbase/pocketbase/tools/osutils"
	"github.com/pocketbase/pocketbase/tools/security"

	"petstore/internal/audit"
	"petstore/internal/database"
	"petstore/internal/datadir"
	"petstore/internal/replica"
)

// keptInPlace are the data directory's entries a restore leaves where
// they are, as PocketBase's own restore does: the backups, the temporary
// directory (where the replaced data waits for the next start), and the
// locks.
var keptInPlace = []string{core.LocalBackupsDirName, core.LocalTempDirName, core.LocalAutocertCacheDirName,
	"lost+found", datadir.LockFile, datadir.UseFile}

// Restored is what Restore did.
type Restored struct {
	Backup string // the zip restored
	// Replaced is where the data the backup replaced waits for the next
	// start, which carries its audit trail across and deletes it; empty
	// when the directory held no data.
	Replaced string
}

// Source is the zip that Restore reads for from: a path when from holds a
// path separator (./backup.zip for one in the working directory), else the
// name of a backup in dataDir's backups.
func Source(dataDir, from string) string {
	if strings.ContainsRune(from, filepath.Separator) || strings.ContainsRune(from, '/') {
		return from
	}
	return filepath.Join(dataDir, core.LocalBackupsDirName, from)
}

// Restore replaces the data of dataDir, which no process may have open,
// with the backup zip at path, as PocketBase's restore does: the backup's
// data.db (checked whole with PRAGMA quick_check first), auxiliary.db and
// storage/ take the place of the directory's, whose own move to its
// temporary directory. The next start carries the audit trail of the data
// replaced into the restored one, revokes again the keys it says were
// revoked and writes backup.restored, by by (Bind), as after
// a restore from the dashboard.
//
// It refuses a directory a petstore process has open (datadir.ErrInUse)
// and a cluster follower's copy, which only its node changes.
func Restore(ctx context.Context, dataDir, path string, by audit.Actor) (Restored, error) {
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return Restored{}, err
	}
	if _, err := os.Stat(path); err != nil {
		return Restored{}, fmt.Errorf("no backup to restore at %s: %w", path, err)
	}
	use, err := datadir.TakeOver(dir)
	if errors.Is(err, datadir.ErrInUse) {
		return Restored{}, fmt.Errorf("%s is in use: a petstore process (serve, or a command) has it open. "+
			"A restore replaces the data only in a stopped directory: stop every petstore serving it (systemctl stop petstore; "+
			"under Litestream, stop litestream replicate), then run the restore again", dir)
	}
	if err != nil {
		return Restored{}, err
	}
	defer use.Release()
	if following, _, err := replica.Following(dir); err != nil {
		return Restored{}, err
	} else if following {
		return Restored{}, fmt.Errorf("%s is a cluster follower's copy of the leader's data, which only its node changes: "+
			"restore into the directory a single server will serve (docs/operations.md, \"Cluster\")", dir)
	}

	temp := filepath.Join(dir, core.LocalTempDirName)
	extracted := filepath.Join(temp, "pb_restore_"+security.PseudorandomString(8))
	defer os.RemoveAll(extracted)
	if err := archive.Extract(path, extracted); err != nil {
		return Restored{}, fmt.Errorf("extract %s: %w", path, err)
	}
	db := filepath.Join(extracted, database.DataFile)
	if _, err := os.Stat(db); err != nil {
		return Restored{}, fmt.Errorf("%s holds no %s: not a backup of a data directory", path, database.DataFile)
	}
	if err := datadir.QuickCheck(ctx, db); err != nil {
		return Restored{}, fmt.Errorf("the backup's %s fails PRAGMA quick_check: %w; nothing was changed", database.DataFile, err)
	}

	done := Restored{Backup: path}
	if _, err := os.Stat(filepath.Join(dir, database.DataFile)); err == nil {
		done.Replaced = filepath.Join(temp, "old_pb_data_"+security.PseudorandomString(8))
		if err := osutils.MoveDirContent(dir, done.Replaced, keptInPlace...); err != nil {
			return Restored{}, fmt.Errorf("move the data directory's content to %s: %w", done.Replaced, err)
		}
		if err := audit.MarkRestore(dir, audit.Restore{Backup: filepath.Base(path), By: by, Requested: time.Now().UTC()}); err != nil {
			return Restored{}, errors.Join(fmt.Errorf("note the restore for the audit trail: %w", err),
				osutils.MoveDirContent(done.Replaced, dir))
		}
	}
	if err := osutils.MoveDirContent(extracted, dir, keptInPlace...); err != nil {
		err = fmt.Errorf("move the backup's content into %s: %w", dir, err)
		if done.Replaced != "" {
			audit.UnmarkRestore(dir)
			err = errors.Join(err, osutils.MoveDirContent(done.Replaced, dir))
		}
		return Restored{}, err
	}
	return done, nil
}
