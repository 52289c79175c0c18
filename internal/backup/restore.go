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
	"github.com/pocketbase/pocketbase/tools/osutils"
	"github.com/pocketbase/pocketbase/tools/security"

	"petstore/internal/audit"
	"petstore/internal/database"
	"petstore/internal/datadir"
	"petstore/internal/fixedcollections"
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
	// LeftOut are the zip's top-level entries not restored (extract).
	LeftOut []string
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
// with the backup zip at path, as PocketBase's restore does, once prepare
// has found it fit: the backup's data.db, auxiliary.db and storage/ take
// the place of the directory's, whose own move to its temporary
// directory. The next start carries the audit trail of the data replaced
// into the restored one, revokes again the keys it says were revoked and
// writes backup.restored, by by (Bind), as after a restore from the
// dashboard. fixed are the collections the service relies on.
//
// It refuses a directory a petstore process has open (datadir.ErrInUse)
// and a cluster follower's copy, which only its node changes.
func Restore(ctx context.Context, dataDir, path string, by audit.Actor, fixed []fixedcollections.Collection) (Restored, error) {
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
	extracted, leftOut, err := prepare(ctx, path, temp, fixed)
	if err != nil {
		return Restored{}, fmt.Errorf("%s: %w", path, err)
	}
	defer os.RemoveAll(extracted)

	done := Restored{Backup: path, LeftOut: leftOut}
	if _, err := os.Stat(filepath.Join(dir, database.DataFile)); err == nil {
		done.Replaced = filepath.Join(temp, "old_pb_data_"+security.PseudorandomString(8))
		if err := osutils.MoveDirContent(dir, done.Replaced, keptInPlace...); err != nil {
			return Restored{}, fmt.Errorf("move the data directory's content to %s: %w", done.Replaced, err)
		}
		note := audit.Restore{Backup: filepath.Base(path), By: by, Requested: time.Now().UTC(), LeftOut: leftOut}
		if err := audit.MarkRestore(dir, note); err != nil {
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

// prepare extracts the backup zip at path into a new directory under temp
// and checks it before it replaces anything: no entry that only a running
// node writes (extract), a data.db that passes PRAGMA quick_check, and a
// schema that petstore's migrations and PocketBase make (checkSchema).
// It returns the directory, to move into place, and the entries it left
// out; on an error, nothing is left under temp.
func prepare(ctx context.Context, path, temp string, fixed []fixedcollections.Collection) (dir string, leftOut []string, err error) {
	if err := os.MkdirAll(temp, datadir.DirMode); err != nil {
		return "", nil, err
	}
	dir = filepath.Join(temp, "pb_restore_"+security.PseudorandomString(8))
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	if leftOut, err = extract(path, dir); err != nil {
		return "", nil, err
	}
	db := filepath.Join(dir, database.DataFile)
	if _, err := os.Stat(db); err != nil {
		return "", nil, fmt.Errorf("the zip holds no %s: not a backup of a data directory", database.DataFile)
	}
	if err := datadir.QuickCheck(ctx, db); err != nil {
		return "", nil, fmt.Errorf("the backup's %s fails PRAGMA quick_check: %w; nothing was changed", database.DataFile, err)
	}
	if err := checkSchema(ctx, dir, temp, fixed); err != nil {
		return "", nil, err
	}
	return dir, leftOut, nil
}
