package replica

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/benbjohnson/litestream"

	"petstore/internal/database"
)

// SetAsideDirName is the directory, in the data directory, where SetAside
// moves databases.
const SetAsideDirName = "set-aside"

// setAsideStamp is the time in a set-aside database's name, UTC.
const setAsideStamp = "20060102T150405.000000000Z"

// SetAside moves the data directory's database out of the way of a
// follower's copy: a former leader's data.db may hold writes it never
// shipped, which must be neither served nor shipped, nor lost. It goes, with
// its WAL, to set-aside/data-<UTC time>.db in the data directory, where
// sqlite3 opens it as it was; SetAside returns that path, or "" when there
// was no database. Litestream's state and a follower's files beside the
// database go too. Nothing may have the database open.
func SetAside(dataDir string) (string, error) {
	return setAside(filepath.Join(dataDir, database.DataFile))
}

// setAside sets the database at dbPath aside, into set-aside/ beside it.
func setAside(dbPath string) (string, error) {
	if _, err := os.Stat(dbPath); errors.Is(err, os.ErrNotExist) {
		return "", removeFollowerState(dbPath)
	} else if err != nil {
		return "", err
	}
	dir := filepath.Join(filepath.Dir(dbPath), SetAsideDirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("set the database aside: %w", err)
	}
	stamp := time.Now().UTC().Format(setAsideStamp)
	name := strings.TrimSuffix(filepath.Base(dbPath), filepath.Ext(dbPath))
	aside := filepath.Join(dir, name+"-"+stamp+".db")
	// The WAL first: a database moved without it would lose what it holds.
	if err := os.Rename(dbPath+"-wal", aside+"-wal"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("set the database's WAL aside: %w", err)
	}
	if err := os.Rename(dbPath, aside); err != nil {
		return "", fmt.Errorf("set the database aside: %w", err)
	}
	// The shared-memory index is rebuilt from the WAL when it is missing.
	if err := os.Remove(dbPath + "-shm"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return aside, err
	}
	return aside, removeFollowerState(dbPath)
}

// removeFollowerState removes Litestream's state and a follower's files
// from beside dbPath.
func removeFollowerState(dbPath string) error {
	var errs []error
	for _, p := range []string{litestream.TXIDPath(dbPath), markPath(dbPath), ledPath(dbPath)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, os.RemoveAll(filepath.Join(filepath.Dir(dbPath), MetaDirName)))
	return errors.Join(errs...)
}

// SetAsideCopy is a database set aside.
type SetAsideCopy struct {
	Path  string
	At    time.Time // when it was set aside
	Bytes int64     // the database's and its WAL's
}

// ListSetAside returns the databases set aside in dataDir, oldest first.
// Files in set-aside/ that SetAside did not name are left out.
func ListSetAside(dataDir string) ([]SetAsideCopy, error) {
	dir := filepath.Join(dataDir, SetAsideDirName)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	prefix := strings.TrimSuffix(database.DataFile, filepath.Ext(database.DataFile)) + "-"
	var copies []SetAsideCopy
	for _, e := range entries {
		name := e.Name()
		stamp, ok := strings.CutPrefix(name, prefix)
		if !ok || !strings.HasSuffix(stamp, ".db") || !e.Type().IsRegular() {
			continue
		}
		at, err := time.Parse(setAsideStamp, strings.TrimSuffix(stamp, ".db"))
		if err != nil {
			continue
		}
		c := SetAsideCopy{Path: filepath.Join(dir, name), At: at}
		for _, p := range []string{c.Path, c.Path + "-wal"} {
			if fi, err := os.Stat(p); err == nil {
				c.Bytes += fi.Size()
			}
		}
		copies = append(copies, c)
	}
	slices.SortFunc(copies, func(a, b SetAsideCopy) int { return a.At.Compare(b.At) })
	return copies, nil
}

// PruneSetAside removes the databases set aside in dataDir before
// now-keep, with their WALs, and returns them.
func PruneSetAside(dataDir string, keep time.Duration, now time.Time) ([]SetAsideCopy, error) {
	copies, err := ListSetAside(dataDir)
	if err != nil {
		return nil, err
	}
	var removed []SetAsideCopy
	for _, c := range copies {
		if !c.At.Before(now.Add(-keep)) {
			break
		}
		if err := os.Remove(c.Path + "-wal"); err != nil && !errors.Is(err, os.ErrNotExist) {
			return removed, err
		}
		if err := os.Remove(c.Path); err != nil {
			return removed, err
		}
		removed = append(removed, c)
	}
	return removed, nil
}
