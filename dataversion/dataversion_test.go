package dataversion_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"

	"petstore/dataversion"
)

// A value is served only while nothing has committed since before it was
// read; a value read across a commit is not kept.
func TestCacheDropsValuesOnAnyCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data.db") + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)"
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	other, err := sql.Open("sqlite", path) // another pool: as another process would
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := db.Exec("CREATE TABLE t (v INTEGER)"); err != nil {
		t.Fatal(err)
	}
	w, err := dataversion.NewWatch(db)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c := dataversion.NewCache[string](w, 2)
	commit := func(pool *sql.DB) {
		t.Helper()
		if _, err := pool.Exec("INSERT INTO t VALUES (1)"); err != nil {
			t.Fatal(err)
		}
	}
	get := func(key string) (string, int64, bool) {
		t.Helper()
		v, version, ok, err := c.Get(key)
		if err != nil {
			t.Fatal(err)
		}
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
