package datadir

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/pocketbase/pocketbase/core"
	// PocketBase's own migrations, which its package registers for a
	// binary.
	_ "github.com/pocketbase/pocketbase/migrations"

	"petstore/internal/database"
)

// serve's early parts start from the start guard before PocketBase's
// bootstrap opens the database (data.db does not exist yet on a first
// start), once; the other commands start none, and a failing early part
// stops the start.
func TestEarlyPartsStartBeforeTheDatabaseOpens(t *testing.T) {
	for _, serving := range []bool{true, false} {
		dir := t.TempDir()
		app := core.NewBaseApp(core.BaseAppConfig{DataDir: dir})
		started := 0
		BindStartup(app, StartupConfig{Serving: serving, LockTimeout: DefaultLockTimeout}, nil,
			slog.New(slog.DiscardHandler), func() error {
				started++
				if _, err := os.Stat(filepath.Join(dir, database.DataFile)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("data.db exists when the early parts start (%v)", err)
				}
				return nil
			})
		if err := app.Bootstrap(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = app.ResetBootstrapState() })
		if want := map[bool]int{true: 1, false: 0}[serving]; started != want {
			t.Errorf("serving %v: the early parts started %d times, want %d", serving, started, want)
		}
	}

	app := core.NewBaseApp(core.BaseAppConfig{DataDir: t.TempDir()})
	BindStartup(app, StartupConfig{Serving: true, LockTimeout: DefaultLockTimeout}, nil,
		slog.New(slog.DiscardHandler), func() error { return errors.New("no leader") })
	if err := app.Bootstrap(); err == nil || err.Error() != "no leader" {
		t.Fatalf("bootstrap with a failing early part: %v", err)
	}
	if app.IsBootstrapped() {
		t.Error("the app bootstrapped despite the failing early part")
	}
}
