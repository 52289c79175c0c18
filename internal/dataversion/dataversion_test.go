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
	"time"

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
	version := func() int64 {
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
	c := dataversion.NewCache[string](10)
	const callers = 8
	var arrived, loads atomic.Int64
	release := make(chan struct{})
	errRead := errors.New("read failed")
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			arrived.Add(1)
			_, err := c.Load(1, "k", func() (string, error) {
				loads.Add(1)
				<-release
				return "", errRead
			})
			if !errors.Is(err, errRead) {
				t.Errorf("Load: %v, want the shared read's error", err)
			}
		})
	}
	for arrived.Load() < callers {
		runtime.Gosched()
	}
	time.Sleep(50 * time.Millisecond) // the callers reach Load
	close(release)
	wg.Wait()
	if n := loads.Load(); n != 1 {
		t.Fatalf("%d callers made %d reads, want 1", callers, n)
	}
	v, err := c.Load(1, "k", func() (string, error) { return "V", nil })
	if err != nil || v != "V" {
		t.Fatalf("after a failed read: %q, %v; want V read again", v, err)
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
