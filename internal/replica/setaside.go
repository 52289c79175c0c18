package replica

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/benbjohnson/litestream"

	"petstore/internal/database"
)

// SetAsideDirName is the directory, in the data directory, where SetAside
// moves databases.
const SetAsideDirName = "set-aside"

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
	stamp := time.Now().UTC().Format("20060102T150405.000000000Z")
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
	for _, p := range []string{litestream.TXIDPath(dbPath), markPath(dbPath)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, os.RemoveAll(filepath.Join(filepath.Dir(dbPath), MetaDirName)))
	return errors.Join(errs...)
}
