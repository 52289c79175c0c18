package backup

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"petstore/internal/audit"
	"petstore/internal/database"
	"petstore/internal/datadir"
)

// What a restore takes from a backup's top level: the two databases, each
// with its write-ahead log (SQLite applies it when the database opens, so
// the checks see it), and the uploaded files. Whatever else a zip holds
// is refused (runningOnly) or left out and named.
var restored = []string{
	database.DataFile, database.DataFile + "-wal",
	auxiliaryFile, auxiliaryFile + "-wal",
}

// runningOnly are the entries that only a running node writes, each with
// why a restore refuses it: restored, it would make the directory
// something else than a single server's data.
var runningOnly = map[string]string{
	database.DataFile + "-follow":     "a cluster follower's mark: every command would refuse the restored directory as a follower's copy",
	database.DataFile + "-follow.tmp": "a cluster follower's mark, half written",
	database.DataFile + "-txid":       "a cluster follower's position in the leader's replica",
	database.DataFile + ".tmp":        "a cluster follower's copy being restored from the leader's replica",
	database.DataFile + "-journal":    "another process's unfinished write, which SQLite would roll into the restored database",
	auxiliaryFile + "-journal":        "another process's unfinished write, which SQLite would roll into the restored database",
	filepath.Base(audit.CarryDir("")): "the audit trail a restore carries across, which only the restore that replaced a directory writes",
}

// RefusedEntriesError is a backup refused for entries that only a running
// node writes.
type RefusedEntriesError struct {
	Entries []string // each "name: why"
}

func (e *RefusedEntriesError) Error() string {
	return "the backup holds what only a running petstore node writes, never part of a backup: " + strings.Join(e.Entries, "; ") +
		". Nothing was changed; remove those entries from the zip to restore the rest"
}

// extract writes the zip at src into dest as a data directory: the
// databases (restored) and storage/, files 0600 and directories 0700
// whatever modes the zip records, regular files and directories only
// (as PocketBase's own extraction). It refuses the entries of
// runningOnly, all named in one RefusedEntriesError before anything is
// written, and returns the top-level names it left out (a running
// process's -shm and locks, PocketBase's own folders, anything else).
func extract(src, dest string) (leftOut []string, err error) {
	zr, err := zip.OpenReader(src)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	var refused []string
	var take []*zip.File
	for _, f := range zr.File {
		name := path.Clean(f.Name)
		if !fs.ValidPath(name) || strings.Contains(f.Name, `\`) {
			return nil, fmt.Errorf("the backup's entry %q names a path outside the data directory", f.Name)
		}
		top, _, _ := strings.Cut(name, "/")
		switch {
		case runningOnly[top] != "":
			if entry := top + ": " + runningOnly[top]; !slices.Contains(refused, entry) {
				refused = append(refused, entry)
			}
		case top == storageDir || slices.Contains(restored, name):
			take = append(take, f)
		case name != ".":
			if !slices.Contains(leftOut, top) {
				leftOut = append(leftOut, top)
			}
		}
	}
	if len(refused) > 0 {
		return nil, &RefusedEntriesError{Entries: refused}
	}
	if err := os.MkdirAll(dest, datadir.DirMode); err != nil {
		return nil, err
	}
	for _, f := range take {
		if err := extractEntry(f, dest); err != nil {
			return nil, err
		}
	}
	return leftOut, nil
}

// extractEntry writes f under dest with the modes of a data directory.
func extractEntry(f *zip.File, dest string) error {
	target := filepath.Join(dest, filepath.FromSlash(path.Clean(f.Name)))
	mode := f.FileInfo().Mode()
	switch {
	case mode.IsDir():
		return os.MkdirAll(target, datadir.DirMode)
	case !mode.IsRegular():
		return nil // links, devices, pipes: as PocketBase's extraction, skipped
	}
	if err := os.MkdirAll(filepath.Dir(target), datadir.DirMode); err != nil {
		return err
	}
	r, err := f.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	w, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, datadir.FileMode)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("the backup holds %s twice", f.Name)
	} else if err != nil {
		return err
	}
	_, err = io.Copy(w, r)
	return errors.Join(err, w.Close())
}
