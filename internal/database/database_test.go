package database_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/tools/cron"

	"petstore/internal/apptest"
	"petstore/internal/database"
)

// Every connection of the app the tests run, to data.db and auxiliary.db,
// for reads and for writes, has the page cache and the pragmas PocketBase
// relies on.
func TestEveryConnectionGetsThePageCache(t *testing.T) {
	s := apptest.Start(t, "")
	for name, db := range map[string]dbx.Builder{
		"data reads": s.App.ConcurrentDB(), "data writes": s.App.NonconcurrentDB(),
		"aux reads": s.App.AuxConcurrentDB(), "aux writes": s.App.AuxNonconcurrentDB(),
	} {
		var cacheSize, busyTimeout int
		var journal string
		if err := db.NewQuery("SELECT * FROM pragma_cache_size(), pragma_busy_timeout(), pragma_journal_mode()").Row(&cacheSize, &busyTimeout, &journal); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if cacheSize != -database.PageCacheKiB || busyTimeout != 10000 || journal != "wal" {
			t.Errorf("%s: cache_size %d, busy_timeout %d, journal_mode %s; want %d, 10000, wal",
				name, cacheSize, busyTimeout, journal, -database.PageCacheKiB)
		}
	}
}

// The daily database job does not wait for a reader of data.db's WAL, as
// Litestream always is one: PocketBase's own job (a TRUNCATE checkpoint)
// holds the write lock for busy_timeout, 10 s, before it gives up.
func TestDailyOptimizeDoesNotWaitForReaders(t *testing.T) {
	s := apptest.Start(t, "")
	write := func() {
		t.Helper()
		if _, err := s.App.NonconcurrentDB().NewQuery("UPDATE _params SET updated = updated").Execute(); err != nil {
			t.Fatal(err)
		}
	}
	write()

	// A reader of the WAL, as Litestream's long read transaction is.
	reader, err := dbx.Open("sqlite", filepath.Join(s.Dir, "data.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	tx, err := reader.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.NewQuery("SELECT count(*) FROM _params").Row(&n); err != nil {
		t.Fatal(err)
	}
	write()

	var job *cron.Job
	for _, j := range s.App.Cron().Jobs() {
		if j.Id() == "__pbDBOptimize__" {
			job = j
		}
	}
	if job == nil || job.Expression() != "0 0 * * *" {
		t.Fatalf("daily job %v, want __pbDBOptimize__ at midnight", job)
	}
	began := time.Now()
	job.Run()
	if took := time.Since(began); took > time.Second {
		t.Fatalf("the daily job took %v with a reader on the WAL", took)
	}
	write()
}
