//go:build unix

package dataversion_test

import (
	"database/sql"
	"os"
	osexec "os/exec"
	"testing"

	"petstore/internal/dataversion"
)

// TestMain lets the test binary be the other process that commits in
// TestVersionReadsOnlyAfterACommit.
func TestMain(m *testing.M) {
	if path := os.Getenv("DATAVERSION_COMMIT_TO"); path != "" {
		db, err := sql.Open("sqlite", path)
		if err == nil {
			_, err = db.Exec("INSERT INTO t VALUES (1)")
			db.Close()
		}
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// With the WAL index header mapped, a Version reads the database only when
// something committed since the last read: in this process, in another one,
// or across a checkpoint that starts the WAL over.
func TestVersionReadsOnlyAfterACommit(t *testing.T) {
	db, other := openTwoPools(t)
	w, err := dataversion.NewWatch(db)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if !dataversion.HeaderMapped(w) {
		t.Fatal("the WAL index header of a database in WAL mode is not mapped")
	}
	version := func() int64 {
		t.Helper()
		v, err := w.Version()
		if err != nil {
			t.Fatal(err)
		}
		return v.Of()
	}
	var path string
	if err := db.QueryRow("SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&path); err != nil {
		t.Fatal(err)
	}
	commits := []struct {
		what   string
		commit func()
	}{
		{"a commit of another pool", func() { exec(t, other, "INSERT INTO t VALUES (1)") }},
		{"a commit of the Watch's pool", func() { exec(t, db, "INSERT INTO t VALUES (1)") }},
		{"a commit of another process", func() {
			cmd := osexec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "DATAVERSION_COMMIT_TO="+path+"?_pragma=busy_timeout(10000)")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("the other process: %v: %s", err, out)
			}
		}},
		{"a commit after a checkpoint that emptied the WAL", func() {
			exec(t, other, "PRAGMA wal_checkpoint(TRUNCATE)")
			exec(t, other, "INSERT INTO t VALUES (1)")
		}},
	}
	seen := version()
	for _, c := range commits {
		reads := dataversion.Reads(w)
		for range 100 {
			if v := version(); v != seen {
				t.Fatalf("before %s: the version moved from %d to %d with no commit", c.what, seen, v)
			}
		}
		if n := dataversion.Reads(w) - reads; n != 0 {
			t.Fatalf("before %s: 100 Versions with no commit made %d reads, want 0", c.what, n)
		}
		c.commit()
		if v := version(); v <= seen {
			t.Fatalf("after %s: version %d, not newer than %d", c.what, v, seen)
		} else {
			seen = v
		}
		if n := dataversion.Reads(w) - reads; n != 1 {
			t.Fatalf("after %s: %d reads, want 1", c.what, n)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Version(); err == nil {
		t.Fatal("a closed Watch returned a version")
	}
}
