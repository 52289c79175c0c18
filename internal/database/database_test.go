package database_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/tools/cron"

	"petstore/internal/apikeys"
	"petstore/internal/database"
	"petstore/testkit/apptest"
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
		var cacheSize, busyTimeout, autocheckpoint int
		var journal string
		if err := db.NewQuery("SELECT * FROM pragma_cache_size(), pragma_busy_timeout(), pragma_journal_mode()").Row(&cacheSize, &busyTimeout, &journal); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := db.NewQuery("PRAGMA wal_autocheckpoint").Row(&autocheckpoint); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if cacheSize != -database.PageCacheKiB || busyTimeout != 10000 || journal != "wal" {
			t.Errorf("%s: cache_size %d, busy_timeout %d, journal_mode %s; want %d, 10000, wal",
				name, cacheSize, busyTimeout, journal, -database.PageCacheKiB)
		}
		// The main database's commits leave checkpoints to the Checkpointer;
		// the auxiliary one's keep SQLite's default.
		want := 1000
		if strings.HasPrefix(name, "data") {
			want = 0
		}
		if autocheckpoint != want {
			t.Errorf("%s: wal_autocheckpoint %d, want %d", name, autocheckpoint, want)
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

// The main database's WAL is copied into the database file while the
// service runs, though no commit checkpoints it: the file grows with the
// pets the WAL holds.
func TestTheWALIsCheckpointedInTheBackground(t *testing.T) {
	apptest.Slow(t)
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "enterprise", PerMinute: 1 << 30, PerDay: 1 << 30})
	path := filepath.Join(s.Dir, database.DataFile)
	size := func() int64 {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return info.Size()
	}
	before := size()
	// More than the WAL's 1,000 pages at which a commit would checkpoint.
	long := strings.Repeat("x", 90)
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Go(func() {
			for i := range 250 {
				body := fmt.Sprintf(`{"name": "%s %d-%d", "categoryId": 1}`, long, c, i)
				req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/pets", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				resp, err := s.Client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					t.Errorf("create: %d", resp.StatusCode)
					return
				}
			}
		})
	}
	wg.Wait()
	for deadline := time.Now().Add(30 * time.Second); size() <= before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("data.db is still %d bytes after 2,000 creates: the WAL is not checkpointed", before)
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
