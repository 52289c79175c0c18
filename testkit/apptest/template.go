package apptest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/database"
)

// migrated holds the files of a data directory in which every migration has
// run, read once per test process. A test's fresh directory starts as their
// copy: the migrations take about 250 ms of the 300 ms an app takes to
// start, and most tests start one.
var migrated struct {
	once  sync.Once
	files map[string][]byte // path relative to the directory: contents
	err   error
}

// newApp is a PocketBase app on dir with petstore's database settings.
func newApp(dir string) *core.BaseApp {
	return core.NewBaseApp(core.BaseAppConfig{DataDir: dir, DBConnect: database.Connect,
		DataMaxOpenConns: database.ReadPoolConns, DataMaxIdleConns: database.ReadPoolConns})
}

// copyMigrated writes a migrated data directory's files into dir.
func copyMigrated(dir string) error {
	migrated.once.Do(func() { migrated.files, migrated.err = readMigrated() })
	if migrated.err != nil {
		return migrated.err
	}
	for rel, data := range migrated.files {
		path := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// readMigrated runs every migration in a directory of its own, closes the
// app (which folds the write-ahead log into the database files) and reads
// what is left.
func readMigrated() (map[string][]byte, error) {
	dir, err := os.MkdirTemp("", "petstore-migrated-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	app := newApp(dir)
	if err := app.Bootstrap(); err != nil {
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	err = app.RunAllMigrations()
	if resetErr := app.ResetBootstrapState(); err == nil {
		err = resetErr
	}
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	files := map[string][]byte{}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		files[rel], err = os.ReadFile(path)
		return err
	})
	return files, err
}
