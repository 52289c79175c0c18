package database_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

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

// The read pool opens at most ReadPoolConns connections and keeps them.
func TestReadPoolIsBounded(t *testing.T) {
	s := apptest.Start(t, "")
	db := s.App.ConcurrentDB().(*dbx.DB).DB()
	if max := db.Stats().MaxOpenConnections; max != database.ReadPoolConns {
		t.Fatalf("the read pool opens at most %d connections, want %d", max, database.ReadPoolConns)
	}
	// Hold every connection: the next one waits until one is given back.
	ctx := context.Background()
	var conns []*sql.Conn
	for free := database.ReadPoolConns - db.Stats().InUse; len(conns) < free; {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if c, err := db.Conn(waitCtx); err == nil {
		c.Close()
		t.Fatalf("a connection beyond %d was opened", database.ReadPoolConns)
	}
	for _, c := range conns {
		c.Close()
	}
	if open := db.Stats().OpenConnections; open != database.ReadPoolConns {
		t.Fatalf("after use: %d connections open, want all %d kept", open, database.ReadPoolConns)
	}
}
