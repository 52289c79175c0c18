package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"
)

// A backup restore (PocketBase's RestoreBackup) moves the data directory's
// content into its temporary directory (old_pb_data_*), moves the backup's
// in its place and replaces the process; the next bootstrap deletes the
// temporary directory. The trail before the restore is carried across it in
// three steps:
//
//  1. MarkRestore, just before the restore, leaves a note of it (the backup,
//     who asked) in the temporary directory, which the restore leaves where
//     it is.
//  2. KeepTrailOfRestore, at the next bootstrap and before PocketBase deletes
//     the temporary directory, moves the database as it was at the moment of
//     the restore (old_pb_data_*/data.db with its WAL, complete: the restore
//     moves it while holding the write lock) and the note to carryDir.
//  3. CarryAcrossRestore, once the migrations have run, copies every record
//     of that trail into the restored one, where it wins over the backup's
//     record of the same id, writes backup.restored, and removes carryDir.
//     Until it succeeds, carryDir stays and each start tries again.
const (
	restoreNote = "petstore_restore.json"
	carryDir    = "petstore_restore_trail" // in the data directory
	dbFile      = "data.db"
)

// Restore is a backup restore about to happen: which backup, who asked.
type Restore struct {
	Backup    string    `json:"backup"`
	By        Actor     `json:"by"`
	Requested time.Time `json:"requested"`
	// LeftOut are the backup's top-level entries the restore did not
	// take (a running process's locks and -shm, folders of its own).
	LeftOut []string `json:"leftOut,omitempty"`
}

// MarkRestore notes r in the data directory's temporary directory, which
// the restore leaves in place.
func MarkRestore(dataDir string, r Restore) error {
	dir := filepath.Join(dataDir, core.LocalTempDirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, restoreNote), raw, 0o600)
}

// UnmarkRestore removes the note of a restore that did not happen.
func UnmarkRestore(dataDir string) {
	_ = os.Remove(filepath.Join(dataDir, core.LocalTempDirName, restoreNote))
}

// KeepTrailOfRestore moves, after a restore, the database as it was before
// it and the restore's note to carryDir, out of the temporary directory the
// bootstrap deletes. Without a note, or without the old database (a restore
// that failed and was undone), it does nothing.
func KeepTrailOfRestore(dataDir string) error {
	temp := filepath.Join(dataDir, core.LocalTempDirName)
	note := filepath.Join(temp, restoreNote)
	if _, err := os.Stat(note); err != nil {
		return nil
	}
	olds, err := filepath.Glob(filepath.Join(temp, "old_pb_data_*", dbFile))
	if err != nil || len(olds) == 0 {
		return err
	}
	old := newest(olds)
	carry := CarryDir(dataDir)
	if err := os.MkdirAll(carry, 0o700); err != nil {
		return err
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		err := os.Rename(old+suffix, filepath.Join(carry, dbFile+suffix))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return os.Rename(note, filepath.Join(carry, restoreNote))
}

// newest is the most recently changed of paths.
func newest(paths []string) string {
	best, bestTime := paths[0], time.Time{}
	for _, p := range paths {
		if info, err := os.Stat(p); err == nil && info.ModTime().After(bestTime) {
			best, bestTime = p, info.ModTime()
		}
	}
	return best
}

// Carried is what CarryAcrossRestore did: the restore, and how many records
// of the trail before it it copied into the restored one.
type Carried struct {
	Restore
	Records int
}

// CarryAcrossRestore copies, after a restore, the trail as it was before it
// into the restored trail, with tx (a transaction, in which the caller
// writes backup.restored), and returns what it did; nil when no restore
// left its trail. Every record of the trail before wins over the backup's
// record of the same id (a record the backup changed or lacks is put back);
// the backup's other records stay (a trail restored on a new server comes
// along). The caller removes carryDir with DoneCarrying once tx commits.
func CarryAcrossRestore(tx core.App) (*Carried, error) {
	carry := CarryDir(tx.DataDir())
	raw, err := os.ReadFile(filepath.Join(carry, restoreNote))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	done := &Carried{}
	if err := json.Unmarshal(raw, &done.Restore); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(carry, dbFile)); err != nil {
		return nil, fmt.Errorf("the trail before the restore of %s is missing from %s: %w", done.Backup, carry, err)
	}
	old, err := core.DefaultDBConnect(filepath.Join(carry, dbFile))
	if err != nil {
		return nil, err
	}
	defer old.Close()
	var rows []dbx.NullStringMap
	if err := old.Select("*").From(Collection).All(&rows); err != nil {
		return nil, fmt.Errorf("read the trail before the restore of %s: %w", done.Backup, err)
	}
	var columns []string
	if err := tx.DB().NewQuery("SELECT name FROM pragma_table_info('" + Collection + "')").Column(&columns); err != nil {
		return nil, err
	}
	for _, row := range rows {
		var names, values []string
		params := dbx.Params{}
		for i, column := range columns {
			v, ok := row[column]
			if !ok {
				continue
			}
			p := fmt.Sprint("v", i)
			names = append(names, "[["+column+"]]")
			values = append(values, "{:"+p+"}")
			if v.Valid {
				params[p] = v.String
			} else {
				params[p] = nil
			}
		}
		sql := "INSERT OR REPLACE INTO {{" + Collection + "}} (" + strings.Join(names, ", ") + ") VALUES (" + strings.Join(values, ", ") + ")"
		if _, err := tx.DB().NewQuery(sql).Bind(params).Execute(); err != nil {
			return nil, fmt.Errorf("copy the trail before the restore of %s: %w", done.Backup, err)
		}
	}
	done.Records = len(rows)
	return done, nil
}

// DoneCarrying removes what KeepTrailOfRestore kept, once the trail it held
// is carried.
func DoneCarrying(dataDir string) error {
	return os.RemoveAll(CarryDir(dataDir))
}

// CarryDir is where KeepTrailOfRestore keeps the database from before a
// restore until its trail is carried.
func CarryDir(dataDir string) string {
	return filepath.Join(dataDir, carryDir)
}
