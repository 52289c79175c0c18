package database_test

import (
	"testing"

	"github.com/pocketbase/dbx"

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
