// Package backup makes, lists and restores backups of a data directory
// from the command line (petstore backup), in the format of PocketBase's
// own backups: a zip of data.db, auxiliary.db and storage/, kept where
// PocketBase keeps its backups (pb_data/backups, or S3 when the settings
// say so), so that the dashboard lists them and can restore them too.
//
// A backup is made while the service serves and writes: each database is
// copied with SQLite's VACUUM INTO, which reads one snapshot, so the copy
// is whole and consistent without holding anyone's writes (PocketBase's
// own backups hold them, and make a TRUNCATE checkpoint that waits on
// Litestream's reader). A restore happens only in a data directory that no
// process has open.
package backup

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/filesystem"
	"github.com/pocketbase/pocketbase/tools/security"

	"petstore/internal/audit"
	"petstore/internal/database"
)

// Prefix starts the names of the backups Create names itself.
const Prefix = "petstore_backup_"

// storageDir is PocketBase's directory of uploaded files in a data
// directory; a backup holds it with the two databases.
const storageDir = "storage"

// auxiliaryFile is PocketBase's second database (the request logs).
const auxiliaryFile = "auxiliary.db"

// nameFormat is what PocketBase's backups API accepts as a name.
var nameFormat = regexp.MustCompile(`^[a-z0-9_-]+\.zip$`)

// Info describes a backup in the backups' storage.
type Info struct {
	Name     string
	Size     int64
	Modified time.Time
}

// Name is the name Create gives a backup made at t.
func Name(t time.Time) string {
	return Prefix + t.UTC().Format("20060102150405") + ".zip"
}

// CheckName tells whether name can be a backup's, as PocketBase's API
// requires: lowercase letters, digits, _ and -, ending in .zip.
func CheckName(name string) error {
	if !nameFormat.MatchString(name) {
		return fmt.Errorf("a backup's name is lowercase letters, digits, _ and -, ending in .zip (as the dashboard's): %q", name)
	}
	return nil
}

// Create makes the backup name of app's data directory, while the service
// may serve and write, puts it in the backups' storage and audits it as
// made by by. It returns what it stored.
func Create(ctx context.Context, app core.App, name string, by audit.Actor) (Info, error) {
	info, err := create(ctx, app, name, app.NewBackupsFilesystem)
	if err != nil {
		return Info{}, err
	}
	if err := audit.Write(app, audit.Entry{Action: audit.BackupCreated, By: by, Details: map[string]any{"backup": name}}); err != nil {
		return info, fmt.Errorf("the backup %s is stored, but could not be audited: %w", name, err)
	}
	return info, nil
}

// create makes the backup name of src's databases and storage, and puts it
// in the storage backups opens.
func create(ctx context.Context, src core.App, name string, backups func() (*filesystem.System, error)) (Info, error) {
	if err := CheckName(name); err != nil {
		return Info{}, err
	}
	dir := src.DataDir()
	temp := filepath.Join(dir, core.LocalTempDirName, "petstore_backup_"+security.PseudorandomString(8))
	if err := os.MkdirAll(temp, 0o700); err != nil {
		return Info{}, err
	}
	defer os.RemoveAll(temp)

	// One snapshot each: data.db is the store, auxiliary.db its logs.
	for _, db := range []struct {
		file string
		exec func(string) error
	}{
		{database.DataFile, func(dest string) error {
			_, err := src.DB().NewQuery("VACUUM INTO {:dest}").WithContext(ctx).Bind(map[string]any{"dest": dest}).Execute()
			return err
		}},
		{auxiliaryFile, func(dest string) error {
			_, err := src.AuxDB().NewQuery("VACUUM INTO {:dest}").WithContext(ctx).Bind(map[string]any{"dest": dest}).Execute()
			return err
		}},
	} {
		if err := db.exec(filepath.Join(temp, db.file)); err != nil {
			return Info{}, fmt.Errorf("copy %s: %w", db.file, err)
		}
	}
	zipPath := filepath.Join(temp, name)
	if err := writeZip(zipPath, temp, filepath.Join(dir, storageDir)); err != nil {
		return Info{}, err
	}

	fsys, err := backups()
	if err != nil {
		return Info{}, err
	}
	defer fsys.Close()
	fsys.SetContext(ctx)
	file, err := filesystem.NewFileFromPath(zipPath)
	if err != nil {
		return Info{}, err
	}
	file.OriginalName, file.Name = name, name
	if err := fsys.UploadFile(file, name); err != nil {
		return Info{}, fmt.Errorf("store the backup %s: %w", name, err)
	}
	info := Info{Name: name, Size: file.Size, Modified: time.Now()}
	if attrs, err := fsys.Attributes(name); err == nil {
		info.Size, info.Modified = attrs.Size, attrs.ModTime
	}
	return info, nil
}

// writeZip writes to path a zip of the two database copies in snapshots
// and of the files under storage, named as in the data directory.
func writeZip(path, snapshots, storage string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	err = func() error {
		for _, file := range []string{database.DataFile, auxiliaryFile} {
			if err := addFile(zw, filepath.Join(snapshots, file), file); err != nil {
				return err
			}
		}
		return filepath.WalkDir(storage, func(p string, d fs.DirEntry, err error) error {
			switch {
			case os.IsNotExist(err) && p == storage:
				return fs.SkipDir // no uploaded files
			case os.IsNotExist(err):
				return nil // deleted meanwhile
			case err != nil:
				return err
			case !d.Type().IsRegular():
				return nil
			}
			rel, err := filepath.Rel(filepath.Dir(storage), p)
			if err != nil {
				return err
			}
			if err := addFile(zw, p, filepath.ToSlash(rel)); err != nil && !os.IsNotExist(err) {
				return err
			}
			return nil
		})
	}()
	if err := errors.Join(err, zw.Close(), f.Close()); err != nil {
		return fmt.Errorf("write the backup %s: %w", path, err)
	}
	return nil
}

func addFile(zw *zip.Writer, path, name string) error {
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	info, err := src.Stat()
	if err != nil {
		return err
	}
	h, err := zip.FileInfoHeader(info)
	if err != nil {
		return err
	}
	h.Name, h.Method = name, zip.Deflate
	w, err := zw.CreateHeader(h)
	if err != nil {
		return err
	}
	_, err = io.Copy(w, src)
	return err
}

// List returns the backups in app's backups storage, newest first.
func List(app core.App) ([]Info, error) { return list(app.NewBackupsFilesystem) }

func list(backups func() (*filesystem.System, error)) ([]Info, error) {
	fsys, err := backups()
	if err != nil {
		return nil, err
	}
	defer fsys.Close()
	objects, err := fsys.List("")
	if err != nil {
		return nil, err
	}
	list := make([]Info, 0, len(objects))
	for _, o := range objects {
		list = append(list, Info{Name: o.Key, Size: o.Size, Modified: o.ModTime})
	}
	slices.SortFunc(list, func(a, b Info) int { return b.Modified.Compare(a.Modified) })
	return list, nil
}

// Prune deletes all but the newest keep of the backups Create named
// (Prefix), audits each deletion as made by by, and returns the names it
// deleted. Backups named otherwise (the dashboard's, the cron's, uploads)
// are left alone.
func Prune(app core.App, keep int, by audit.Actor) ([]string, error) {
	return prune(app.NewBackupsFilesystem, keep, func(name string) error {
		return audit.Write(app, audit.Entry{Action: audit.BackupDeleted, By: by, Details: map[string]any{"backup": name}})
	})
}

// prune deletes all but the newest keep of the backups named Prefix… in
// the storage backups opens, recording each deletion with deleted.
func prune(backups func() (*filesystem.System, error), keep int, record func(name string) error) ([]string, error) {
	all, err := list(backups)
	if err != nil {
		return nil, err
	}
	fsys, err := backups()
	if err != nil {
		return nil, err
	}
	defer fsys.Close()
	var deleted []string
	kept := 0
	for _, b := range all {
		if !strings.HasPrefix(b.Name, Prefix) {
			continue
		}
		if kept < keep {
			kept++
			continue
		}
		if err := fsys.Delete(b.Name); err != nil {
			return deleted, fmt.Errorf("delete the backup %s: %w", b.Name, err)
		}
		deleted = append(deleted, b.Name)
		if err := record(b.Name); err != nil {
			return deleted, fmt.Errorf("the backup %s is deleted, but could not be recorded: %w", b.Name, err)
		}
	}
	return deleted, nil
}
