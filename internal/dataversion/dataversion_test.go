package dataversion_test

import (
	"database/sql"
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	_ "modernc.org/sqlite"

	"petstore/internal/dataversion"
)

// openTwoPools opens two pools on one new database with a table t: the
// Watch's, and another, as another process would be.
func openTwoPools(t testing.TB) (db, other *sql.DB) {
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

// newWatch is a Watch on db, closed when the test ends.
func newWatch(t testing.TB, db *sql.DB) *dataversion.Watch {
	t.Helper()
	w, err := dataversion.NewWatch(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// loader is load, which asks a cache for the value of one key at w's
// Version, as a request does; loaded tells whether the value was read
// rather than kept.
func loader(t *testing.T, w *dataversion.Watch) (load func(c *dataversion.Cache[int]) (loaded bool)) {
	return func(c *dataversion.Cache[int]) (loaded bool) {
		t.Helper()
		v, err := w.Version()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Load(v, "k", func() (int, error) { loaded = true; return 1, nil }); err != nil {
			t.Fatal(err)
		}
		return loaded
	}
}

// A value is served only while nothing has committed since before it was
// read; a value read across a commit is not kept.
func TestCacheDropsValuesOnAnyCommit(t *testing.T) {
	db, other := openTwoPools(t)
	w := newWatch(t, db)
	c := dataversion.NewCache[string](2)
	commit := func(pool *sql.DB) {
		t.Helper()
		if _, err := pool.Exec("INSERT INTO t VALUES (1)"); err != nil {
			t.Fatal(err)
		}
	}
	version := func() dataversion.Version {
		t.Helper()
		v, err := w.Version()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// As a request does: the version when it begins, then the cache at it;
	// loaded tells whether the value was read rather than kept.
	get := func(key string) (value string, loaded bool) {
		t.Helper()
		value, err := c.Load(version(), key, func() (string, error) {
			loaded = true
			return strings.ToUpper(key), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return value, loaded
	}

	if v, loaded := get("a"); !loaded || v != "A" {
		t.Fatalf("get a: %q, loaded %v; want A read", v, loaded)
	}
	if v, loaded := get("a"); loaded || v != "A" {
		t.Fatalf("get a again: %q, loaded %v; want A kept", v, loaded)
	}
	for _, pool := range []*sql.DB{db, other} {
		commit(pool)
		if _, loaded := get("a"); !loaded {
			t.Fatal("a value survived a commit")
		}
		// A value read across a commit that another caller has seen.
		_, _ = c.Load(version(), "x", func() (string, error) {
			commit(pool)
			get("a")
			return "stale", nil
		})
		if v, loaded := get("x"); !loaded || v != "X" {
			t.Fatalf("get x: %q, loaded %v; a value read across a commit was kept", v, loaded)
		}
	}

	// A caller whose version is older than the latest seen is served what
	// is kept at the latest, and what it reads is kept at the latest.
	older := version()
	commit(db)
	get("a")
	if v, err := c.Load(older, "a", func() (string, error) { return "", errors.New("read again") }); err != nil || v != "A" {
		t.Fatalf("an older caller: %q, %v; want A, kept at the newer version", v, err)
	}
	if _, err := c.Load(older, "y", func() (string, error) { return "Y", nil }); err != nil {
		t.Fatal(err)
	}
	if v, loaded := get("y"); loaded || v != "Y" {
		t.Fatalf("get y: %q, loaded %v; want what an older caller read kept", v, loaded)
	}
	commit(db)

	// Bounded: a full cache keeps what it has.
	for _, k := range []string{"a", "b", "c"} {
		get(k)
	}
	if _, loaded := get("c"); !loaded {
		t.Fatal("the cache holds more than its bound")
	}
}

// Callers at one version that miss one key share one read, and its error;
// an error is not kept.
func TestCallersShareARead(t *testing.T) {
	db, _ := openTwoPools(t)
	w := newWatch(t, db)
	at, err := w.Version()
	if err != nil {
		t.Fatal(err)
	}
	const callers = 8
	// In a bubble, synctest.Wait returns once every caller is blocked in
	// Load: one reading, the others waiting for its read.
	synctest.Test(t, func(t *testing.T) {
		c := dataversion.NewCache[string](10)
		var loads atomic.Int64
		release := make(chan struct{})
		errRead := errors.New("read failed")
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				_, err := c.Load(at, "k", func() (string, error) {
					loads.Add(1)
					<-release
					return "", errRead
				})
				if !errors.Is(err, errRead) {
					t.Errorf("Load: %v, want the shared read's error", err)
				}
			})
		}
		synctest.Wait()
		close(release)
		wg.Wait()
		if n := loads.Load(); n != 1 {
			t.Fatalf("%d callers made %d reads, want 1", callers, n)
		}
		v, err := c.Load(at, "k", func() (string, error) { return "V", nil })
		if err != nil || v != "V" {
			t.Fatalf("after a failed read: %q, %v; want V read again", v, err)
		}
	})
}

// TestVersionSeesCommitsBeforeTheCall checks what sharing reads among
// concurrent callers must keep: a call that begins after a commit has ended
// returns a version that counts it. Before commit k the writer reads
// before[k] itself; every call begun after commit k has ended must return a
// newer version.
func TestVersionSeesCommitsBeforeTheCall(t *testing.T) {
	db, other := openTwoPools(t)
	w := newWatch(t, db)

	const commits, readers = 200, 8
	before := make([]int64, commits+1) // each written before committed reaches its index
	var committed, checked atomic.Int64
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			for {
				after := committed.Load()
				v, err := w.Version()
				if err != nil {
					t.Error(err)
					return
				}
				if after > 0 && v.Of() <= before[after] {
					t.Errorf("a call begun after commit %d returned version %d, not newer than %d read before it", after, v.Of(), before[after])
					return
				}
				checked.Add(1)
				if after == commits {
					return
				}
				runtime.Gosched()
			}
		})
	}
	for k := 1; k <= commits; k++ {
		v, err := w.Version()
		if err != nil {
			t.Fatal(err)
		}
		before[k] = v.Of()
		if _, err := other.Exec("INSERT INTO t VALUES (?)", k); err != nil {
			t.Fatal(err)
		}
		committed.Store(int64(k))
	}
	wg.Wait()
	if n := checked.Load(); n < commits {
		t.Fatalf("only %d calls checked", n)
	}
}

// countChanges makes counters on db, as the migration does: the table, a
// row per counter and its triggers.
func countChanges(t testing.TB, db *sql.DB, counters ...string) {
	t.Helper()
	exec(t, db, "CREATE TABLE IF NOT EXISTS "+dataversion.ChangesTable+" (tbl TEXT PRIMARY KEY NOT NULL, n INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID")
	for _, counter := range counters {
		exec(t, db, "INSERT INTO "+dataversion.ChangesTable+" (tbl) VALUES (?)", counter)
		for _, trigger := range dataversion.Triggers(counter) {
			exec(t, db, trigger.SQL)
		}
	}
}

func exec(t testing.TB, db *sql.DB, query string, args ...any) {
	t.Helper()
	if _, err := db.Exec(query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// A cache of some tables keeps its values across commits of other tables
// and drops them at the first change of one of its own, by an insert, an
// update or a delete, from this pool or another (as another process); a
// cache of no table drops them on every commit.
func TestCacheKeepsValuesAcrossCommitsOfOtherTables(t *testing.T) {
	db, other := openTwoPools(t)
	exec(t, db, "CREATE TABLE keys (v INTEGER)")
	exec(t, db, "CREATE TABLE plans (v INTEGER)")
	countChanges(t, db, "keys", "plans")
	w := newWatch(t, db)
	keys := dataversion.NewCache[int](10, "keys", "plans")
	all := dataversion.NewCache[int](10)
	get := loader(t, w)
	get(keys)
	get(all)
	for i, pool := range []*sql.DB{db, other, db} {
		exec(t, pool, "INSERT INTO t VALUES (?)", i)
		if get(keys) {
			t.Fatalf("commit %d of another table dropped the keys' cache", i)
		}
		if !get(all) {
			t.Fatalf("commit %d: the cache of every table kept its value", i)
		}
	}
	for _, change := range []struct {
		pool  *sql.DB
		query string
	}{
		{other, "INSERT INTO keys VALUES (1)"},
		{db, "UPDATE keys SET v = 2"},
		{other, "INSERT INTO plans VALUES (1)"},
		{other, "DELETE FROM plans"},
		{db, "DELETE FROM keys"},
	} {
		exec(t, change.pool, change.query)
		if !get(keys) {
			t.Fatalf("%s: the keys' cache kept its value", change.query)
		}
		if get(keys) {
			t.Fatalf("%s: the value read after it was not kept", change.query)
		}
	}
}

// A table whose triggers are not all in place, or not as Triggers makes
// them, counts as changed by every commit: a cache of it is never kept past
// a change that a missing trigger did not count.
func TestCacheOfATableWithoutItsTriggersFollowsEveryCommit(t *testing.T) {
	db, other := openTwoPools(t)
	exec(t, db, "CREATE TABLE keys (v INTEGER)")
	exec(t, db, "CREATE TABLE plans (v INTEGER)")
	countChanges(t, db, "keys")
	w := newWatch(t, db)
	load := loader(t, w)

	plans := dataversion.NewCache[int](10, "plans") // no counter, no triggers
	load(plans)
	exec(t, other, "INSERT INTO t VALUES (1)")
	if !load(plans) {
		t.Fatal("a cache of a table without triggers kept its value across a commit")
	}

	keys := dataversion.NewCache[int](10, "keys")
	update := dataversion.Triggers("keys")[1]
	load(keys)
	exec(t, other, "DROP TRIGGER "+update.Name)
	load(keys) // the schema changed: read again
	exec(t, other, "INSERT INTO keys VALUES (1)")
	exec(t, other, "UPDATE keys SET v = 2") // counted by no trigger
	if !load(keys) {
		t.Fatal("an update that no trigger counted kept the keys' cache")
	}
	exec(t, other, "INSERT INTO t VALUES (2)")
	if !load(keys) {
		t.Fatal("a table missing a trigger kept its cache across a commit")
	}

	exec(t, other, "CREATE TRIGGER "+update.Name+" AFTER UPDATE ON keys BEGIN SELECT 1; END")
	load(keys)
	exec(t, other, "UPDATE keys SET v = 3")
	if !load(keys) {
		t.Fatal("a trigger that counts nothing kept the keys' cache")
	}

	exec(t, other, "DROP TRIGGER "+update.Name)
	exec(t, other, update.SQL)
	load(keys)
	exec(t, other, "INSERT INTO t VALUES (3)")
	if load(keys) {
		t.Fatal("with its triggers back, the keys' cache did not survive a commit of another table")
	}
	exec(t, other, "UPDATE keys SET v = 4")
	if !load(keys) {
		t.Fatal("with its triggers back, an update kept the keys' cache")
	}
}

// A cache of rows by id (Rows) is kept while rows are added, and dropped by
// an update, a deletion, or an insert that replaces a row.
func TestCacheOfRowsIsKeptWhileRowsAreAdded(t *testing.T) {
	db, other := openTwoPools(t)
	exec(t, db, "CREATE TABLE pets (id TEXT PRIMARY KEY NOT NULL, name TEXT)")
	exec(t, db, "INSERT INTO pets VALUES ('1', 'Rex')")
	load := loadOf(t, db, dataversion.Rows("pets"))
	load()
	for i, query := range []string{"INSERT INTO pets VALUES ('2', 'Tom')", "INSERT INTO t VALUES (1)"} {
		exec(t, []*sql.DB{db, other}[i%2], query)
		if load() {
			t.Fatalf("%s dropped the rows' cache", query)
		}
	}
	for i, query := range []string{
		"UPDATE pets SET name = 'Max' WHERE id = '2'",
		"INSERT OR REPLACE INTO pets VALUES ('1', 'Max')",
		"REPLACE INTO pets VALUES ('1', 'Rex')",
		"INSERT INTO pets VALUES ('1', 'Rex') ON CONFLICT (id) DO UPDATE SET name = 'Bo'",
		"DELETE FROM pets WHERE id = '2'",
	} {
		exec(t, []*sql.DB{db, other}[i%2], query)
		if !load() {
			t.Fatalf("%s kept the rows' cache", query)
		}
	}
}

// A cache of what comes before a table's last id (Before) is kept while rows
// are appended after every other, and dropped by an insert below the
// largest id, an update, a deletion, or an insert that replaces a row other
// than the last.
func TestCacheOfRowsBeforeTheLastIsKeptWhileRowsAreAppended(t *testing.T) {
	db, other := openTwoPools(t)
	exec(t, db, "CREATE TABLE pets (id TEXT PRIMARY KEY NOT NULL, name TEXT)")
	exec(t, db, "INSERT INTO pets VALUES ('20', 'Rex'), ('30', 'Tom')")
	load := loadOf(t, db, dataversion.Before("pets"))
	load()
	for i, query := range []string{
		"INSERT INTO pets VALUES ('40', 'Bo')",
		"INSERT INTO t VALUES (1)",
		"INSERT INTO pets VALUES ('50', 'Cy'), ('60', 'Di')",
		"INSERT OR REPLACE INTO pets VALUES ('60', 'Ed')",
	} {
		exec(t, []*sql.DB{db, other}[i%2], query)
		if load() {
			t.Fatalf("%s dropped the cache", query)
		}
	}
	for i, query := range []string{
		"INSERT INTO pets VALUES ('10', 'Al')",
		"INSERT INTO pets VALUES ('70', 'Fa'), ('65', 'Gi')",
		"UPDATE pets SET name = 'Max' WHERE id = '70'",
		"INSERT OR REPLACE INTO pets VALUES ('20', 'Max')",
		"INSERT INTO pets VALUES ('30', 'Rex') ON CONFLICT (id) DO UPDATE SET name = 'Bo'",
		"DELETE FROM pets WHERE id = '70'",
	} {
		exec(t, []*sql.DB{db, other}[i%2], query)
		if !load() {
			t.Fatalf("%s kept the cache", query)
		}
	}
}

// loadOf makes counter's triggers on db and returns a function that loads
// one key of a cache of counter, at the version a Watch on db reads now, and
// reports whether it was read rather than kept.
func loadOf(t *testing.T, db *sql.DB, counter string) (load func() (loaded bool)) {
	t.Helper()
	countChanges(t, db, counter)
	cache, loadFrom := dataversion.NewCache[int](10, counter), loader(t, newWatch(t, db))
	return func() bool { t.Helper(); return loadFrom(cache) }
}

// Of's numbers start again with each Watch, so each Watch's Versions carry
// an Epoch of their own: a number from before a restart (a new Watch on the
// same database) never names a state with the same Epoch.
func TestEachWatchHasItsOwnEpoch(t *testing.T) {
	db, other := openTwoPools(t)
	first := newWatch(t, db)
	before, err := first.Version()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Exec("INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	after, err := first.Version()
	if err != nil {
		t.Fatal(err)
	}
	if before.Epoch() != after.Epoch() || before.Of() == after.Of() {
		t.Errorf("one Watch across a commit: epochs %d and %d, numbers %d and %d; want one epoch, two numbers",
			before.Epoch(), after.Epoch(), before.Of(), after.Of())
	}
	restarted, err := newWatch(t, other).Version()
	if err != nil {
		t.Fatal(err)
	}
	if restarted.Epoch() == before.Epoch() {
		t.Errorf("a second Watch has the first one's epoch %d", before.Epoch())
	}
}
