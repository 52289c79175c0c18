package database_test

import (
	"path/filepath"
	"testing"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/database"
)

// What this package copies from PocketBase is still PocketBase's: its
// connections' pragmas (core.DefaultDBConnect), which Connect repeats with
// its own page cache, and the id of its daily optimize job, which
// BindDailyOptimize replaces. An upgrade that changes either fails here
// (docs/architecture.md, "PocketBase internals we depend on").
func TestWhatWeCopyIsPocketBases(t *testing.T) {
	dir := t.TempDir()
	pragmas := func(open func(string) (*dbx.DB, error), file string) map[string]any {
		t.Helper()
		db, err := open(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		values := map[string]any{}
		for _, name := range []string{"busy_timeout", "journal_mode", "journal_size_limit", "synchronous", "foreign_keys", "temp_store"} {
			var v string
			if err := db.NewQuery("PRAGMA " + name).Row(&v); err != nil {
				t.Fatalf("PRAGMA %s: %v", name, err)
			}
			values[name] = v
		}
		return values
	}
	theirs := pragmas(core.DefaultDBConnect, "theirs.db")
	ours := pragmas(database.Connect, "ours.db")
	for name, v := range theirs {
		if ours[name] != v {
			t.Errorf("PRAGMA %s: %v, PocketBase's connections have %v", name, ours[name], v)
		}
	}

	app := core.NewBaseApp(core.BaseAppConfig{DataDir: t.TempDir()})
	if err := app.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	defer app.ResetBootstrapState()
	var found bool
	for _, j := range app.Cron().Jobs() {
		found = found || j.Id() == database.DailyOptimizeJobID
	}
	if !found {
		t.Errorf("PocketBase's app has no cron job %q to replace", database.DailyOptimizeJobID)
	}
}
