package dataversion_test

import (
	"database/sql"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	_ "modernc.org/sqlite"

	"petstore/internal/dataversion"
)

// openTwoPools opens two pools on one new database with a table t: the
// Watch's, and another, as another process would be.
func openTwoPools(t *testing.T) (db, other *sql.DB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data.db") + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)"
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	other, err = sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	if _, err := db.Exec("CREATE TABLE t (v INTEGER)"); err != nil {
		t.Fatal(err)
	}
	return db, other
}

// A value is served only while nothing has committed since before it was
// read; a value read across a commit is not kept.
func TestCacheDropsValuesOnAnyCommit(t *testing.T) {
	db, other := openTwoPools(t)
	w, err := dataversion.NewWatch(db)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c := dataversion.NewCache[string](2)
	commit := func(pool *sql.DB) {
		t.Helper()
		if _, err := pool.Exec("INSERT INTO t VALUES (1)"); err != nil {
			t.Fatal(err)
		}
	}
	// As a request does: the version when it begins, then the cache at it.
	get := func(key string) (string, int64, bool) {
		t.Helper()
		version, err := w.Version()
		if err != nil {
			t.Fatal(err)
		}
		v, ok := c.Get(version, key)
		return v, version, ok
	}

	_, version, _ := get("a")
	c.Put(version, "a", "A")
	if v, _, ok := get("a"); !ok || v != "A" {
		t.Fatalf("get a: %q %v, want A kept", v, ok)
	}
	for _, pool := range []*sql.DB{db, other} {
		commit(pool)
		if _, _, ok := get("a"); ok {
			t.Fatal("a value survived a commit")
		}
		c.Put(version, "a", "A") // read before the commit
		if _, _, ok := get("a"); ok {
			t.Fatal("a value read before a commit was kept")
		}
		_, version, _ = get("a")
	}

	// Bounded: a full cache keeps what it has.
	for _, k := range []string{"a", "b", "c"} {
		c.Put(version, k, k)
	}
	if _, _, ok := get("c"); ok {
		t.Fatal("the cache holds more than its bound")
	}
}

// TestVersionSeesCommitsBeforeTheCall checks what sharing reads among
// concurrent callers must keep: a call that begins after a commit has ended
// returns a version that counts it. Before commit k the writer reads
// before[k] itself; every call begun after commit k has ended must return a
// newer version.
func TestVersionSeesCommitsBeforeTheCall(t *testing.T) {
	db, other := openTwoPools(t)
	w, err := dataversion.NewWatch(db)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	const commits, readers = 200, 8
	before := make([]int64, commits+1)
	var committed atomic.Int64
	type call struct {
		after   int64 // commits ended before the call began
		version int64
	}
	calls := make([][]call, readers)
	var wg sync.WaitGroup
	for r := range readers {
		wg.Go(func() {
			for {
				after := committed.Load()
				v, err := w.Version()
				if err != nil {
					t.Error(err)
					return
				}
				calls[r] = append(calls[r], call{after, v})
				if after == commits {
					return
				}
			}
		})
	}
	for k := 1; k <= commits; k++ {
		if before[k], err = w.Version(); err != nil {
			t.Fatal(err)
		}
		if _, err := other.Exec("INSERT INTO t VALUES (?)", k); err != nil {
			t.Fatal(err)
		}
		committed.Store(int64(k))
	}
	wg.Wait()
	checked := 0
	for _, rc := range calls {
		for _, c := range rc {
			if c.after > 0 && c.version <= before[c.after] {
				t.Fatalf("a call begun after commit %d returned version %d, not newer than %d read before it", c.after, c.version, before[c.after])
			}
			checked++
		}
	}
	if checked < commits {
		t.Fatalf("only %d calls checked", checked)
	}
}
