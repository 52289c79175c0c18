// Package datadir guards petstore's data directory when a process starts:
// who may read it (the owner alone), one start at a time (a lock that the
// migrations run under), which migrations its data has (data from a newer
// petstore is refused), a copy before migrations change it, and whether
// its main database is whole (PRAGMA quick_check).
package datadir

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Modes of the data directory, the directories under it, and its files:
// data.db holds the hashes of API keys and superusers' passwords.
const (
	DirMode  fs.FileMode = 0o700
	FileMode fs.FileMode = 0o600
)

// Secure makes dir, and its parents if needed, and takes from group and
// others every permission on dir and on everything under it, for data
// directories made before petstore did (or by a looser umask). It returns
// how many entries it changed. Symbolic links are left as they are and not
// followed.
func Secure(dir string) (changed int, err error) {
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return 0, err
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path != dir && errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile (a -shm, a temp file)
			}
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		} else if err != nil {
			return err
		}
		want := FileMode
		if d.IsDir() {
			want = DirMode
		}
		// Bits the owner has are kept (an executable in storage stays one).
		mode := info.Mode().Perm()
		if mode&^want&0o077 == 0 {
			return nil
		}
		if err := os.Chmod(path, mode&^0o077); err != nil {
			return err
		}
		changed++
		return nil
	})
	return changed, err
}

// State is what a data directory's main database says about its
// migrations.
type State struct {
	// Empty is a database that does not exist yet, or holds no applied
	// migration: a first start.
	Empty bool
	// Applied counts the migrations the database records.
	Applied int
	// Pending are the known migrations the database has not applied, in
	// the order given.
	Pending []string
	// Unknown are the migrations the database records and this binary does
	// not know: the data comes from a newer petstore.
	Unknown []string
}

// Inspect reads which migrations the database at dbPath has applied
// (PocketBase's _migrations table) and compares them with known, every
// migration of this binary. It creates nothing.
func Inspect(ctx context.Context, dbPath string, known []string) (State, error) {
	var s State
	if info, err := os.Stat(dbPath); errors.Is(err, fs.ErrNotExist) || (err == nil && info.Size() == 0) {
		s.Empty, s.Pending = true, slices.Clone(known)
		return s, nil
	} else if err != nil {
		return s, err
	}
	db, err := open(dbPath)
	if err != nil {
		return s, err
	}
	defer db.Close()
	var tables int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '_migrations'").Scan(&tables); err != nil {
		return s, fmt.Errorf("read %s: %w", dbPath, err)
	}
	applied := map[string]bool{}
	if tables > 0 {
		rows, err := db.QueryContext(ctx, "SELECT file FROM _migrations ORDER BY applied, file")
		if err != nil {
			return s, fmt.Errorf("read the migrations of %s: %w", dbPath, err)
		}
		for rows.Next() {
			var file string
			if err := rows.Scan(&file); err != nil {
				rows.Close()
				return s, err
			}
			applied[file] = true
			if !slices.Contains(known, file) {
				s.Unknown = append(s.Unknown, file)
			}
		}
		if err := rows.Close(); err != nil {
			return s, err
		}
		if err := rows.Err(); err != nil {
			return s, err
		}
	}
	s.Applied = len(applied)
	s.Empty = s.Applied == 0
	for _, file := range known {
		if !applied[file] {
			s.Pending = append(s.Pending, file)
		}
	}
	return s, nil
}

// BackupsDir is PocketBase's directory of backups in a data directory; its
// own backups leave it out of theirs.
const BackupsDir = "backups"

// Backup writes a consistent copy of the database at dbPath into the data
// directory's backups, named pre-upgrade-TIME.db (UTC), and returns its
// path. VACUUM INTO reads one snapshot, so the copy is whole even while
// other processes write (instances of the older version still serving).
func Backup(ctx context.Context, dataDir, dbPath string, now time.Time) (string, error) {
	dir := filepath.Join(dataDir, BackupsDir)
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return "", err
	}
	dest := filepath.Join(dir, "pre-upgrade-"+now.UTC().Format("20060102T150405Z")+".db")
	db, err := open(dbPath)
	if err != nil {
		return "", err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", dest); err != nil {
		os.Remove(dest)
		return "", fmt.Errorf("copy %s to %s: %w", dbPath, dest, err)
	}
	return dest, nil
}

// ErrDamaged is in the chain of QuickCheck's error when the database is
// damaged, as opposed to the check not running to its end.
var ErrDamaged = errors.New("the database is damaged")

// QuickCheck runs PRAGMA quick_check on the database at dbPath until ctx
// ends. It returns nil when the check says ok; an error wrapping ErrDamaged
// with the check's first findings when it finds damage (or SQLite finds the
// file malformed while checking); ctx's error when time runs out first.
func QuickCheck(ctx context.Context, dbPath string) error {
	db, err := open(dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "PRAGMA quick_check(10)")
	if err != nil {
		return checkErr(ctx, err)
	}
	defer rows.Close()
	var findings []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return checkErr(ctx, err)
		}
		findings = append(findings, line)
	}
	if err := rows.Err(); err != nil {
		return checkErr(ctx, err)
	}
	if len(findings) == 1 && findings[0] == "ok" {
		return nil
	}
	return fmt.Errorf("%w: quick_check: %s", ErrDamaged, strings.Join(findings, "; "))
}

// checkErr tells damage (SQLite's CORRUPT and NOTADB) from the check's
// other failures.
func checkErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var e *sqlite.Error
	if errors.As(err, &e) {
		switch e.Code() & 0xff {
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("%w: quick_check: %v", ErrDamaged, err)
		}
	}
	return err
}

// open opens the database at dbPath on one connection, waiting as long as
// PocketBase does for another process's write.
func open(dbPath string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dbPath+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}
