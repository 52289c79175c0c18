package dataversion_test

import (
	"database/sql"
	"fmt"
	"os"
	osexec "os/exec"
	"syscall"
	"testing"
)

// TestMain lets the test binary be the other process that commits in
// TestVersionReadsOnlyAfterACommit, or that looks at the locks on a WAL
// index in TestWatchLeavesSQLitesLocks.
func TestMain(m *testing.M) {
	if path := os.Getenv("DATAVERSION_SHM_LOCKED"); path != "" {
		os.Exit(shmLocked(path))
	}
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
	w := newWatch(t, db)
	if err := w.HeaderErr(); err != nil {
		t.Fatalf("the WAL index header of a database in WAL mode is not mapped: %v", err)
	}
	version := func() int64 {
		t.Helper()
		v, err := w.Version()
		if err != nil {
			t.Fatal(err)
		}
		return v.Of()
	}
	path := mainFile(t, db)
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
		reads := w.Reads()
		for range 100 {
			if v := version(); v != seen {
				t.Fatalf("before %s: the version moved from %d to %d with no commit", c.what, seen, v)
			}
		}
		if n := w.Reads() - reads; n != 0 {
			t.Fatalf("before %s: 100 Versions with no commit made %d reads, want 0", c.what, n)
		}
		c.commit()
		if v := version(); v <= seen {
			t.Fatalf("after %s: version %d, not newer than %d", c.what, v, seen)
		} else {
			seen = v
		}
		if n := w.Reads() - reads; n != 1 {
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

// dmsLockByte is the byte of the WAL index file that SQLite's unix VFS
// read-locks in every process with the database open; a process that can
// write-lock it takes itself for the only one, and truncates the file.
const dmsLockByte = 128

// shmLocked exits 0 when another process holds a lock on path's DMS byte.
func shmLocked(path string) int {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 2
	}
	lock := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: dmsLockByte, Len: 1}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lock); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 2
	}
	if lock.Type == syscall.F_UNLCK {
		os.Stderr.WriteString("nothing holds the WAL index's DMS lock\n")
		return 1
	}
	return 0
}

// Mapping the WAL index header leaves SQLite's locks on the file as they
// were: another process that opens the database must see this one's, or it
// would truncate the file under this process's connections.
func TestWatchLeavesSQLitesLocks(t *testing.T) {
	db, _ := openTwoPools(t)
	path := mainFile(t, db)
	locked := func() error {
		cmd := osexec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "DATAVERSION_SHM_LOCKED="+path+"-shm")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	if err := locked(); err != nil {
		t.Fatalf("before the Watch: %v", err)
	}
	w := newWatch(t, db)
	if err := w.HeaderErr(); err != nil {
		t.Fatalf("the WAL index header is not mapped: %v", err)
	}
	if _, err := w.Version(); err != nil {
		t.Fatal(err)
	}
	if err := locked(); err != nil {
		t.Fatalf("after the Watch mapped the header: %v", err)
	}
}

// mainFile is the file of db's main database.
func mainFile(t *testing.T, db *sql.DB) string {
	t.Helper()
	var path string
	if err := db.QueryRow("SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&path); err != nil {
		t.Fatal(err)
	}
	return path
}
