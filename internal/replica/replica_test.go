package replica

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/litestream"

	"petstore/internal/database"
)

// slow skips a test that ships or follows for seconds under -short, the
// fast loop; `go test ./...` runs it.
func slow(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: a test that ships for seconds")
	}
}

// testLog writes the package's log to the test's.
func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// store is a data directory written as a leader's PocketBase writes
// data.db: its connection's pragmas (WAL, no automatic checkpoints), and
// no Checkpointer: Litestream checkpoints.
type store struct {
	dir  string
	path string
	db   *sql.DB
}

func openStore(t *testing.T, dir string) *store {
	t.Helper()
	path := filepath.Join(dir, database.DataFile)
	db, err := database.Connect(path)
	if err != nil {
		t.Fatal(err)
	}
	db.DB().SetMaxOpenConns(1)
	if _, err := db.DB().Exec(`CREATE TABLE IF NOT EXISTS pets (id INTEGER PRIMARY KEY, name TEXT NOT NULL, body BLOB NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	s := &store{dir: dir, path: path, db: db.DB()}
	t.Cleanup(func() { s.close(t) })
	return s
}

func (s *store) close(t *testing.T) {
	if s.db == nil {
		return
	}
	if err := s.db.Close(); err != nil {
		t.Error(err)
	}
	s.db = nil
}

// write commits n transactions of one pet each and returns the last id.
func (s *store) write(t *testing.T, n int) int64 {
	t.Helper()
	var id int64
	for range n {
		res, err := s.db.Exec(`INSERT INTO pets (name, body) VALUES (?, randomblob(200))`, fmt.Sprintf("pet-%d", time.Now().UnixNano()))
		if err != nil {
			t.Fatal(err)
		}
		if id, err = res.LastInsertId(); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

// rows returns a database's pets, in order, as one string per pet holding
// its every byte.
func rows(t *testing.T, path string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var check string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil {
		t.Fatal(err)
	}
	if check != "ok" {
		t.Fatalf("%s: integrity_check %q", path, check)
	}
	rs, err := db.Query(`SELECT id, name, hex(body) FROM pets ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var id int64
		var name, body string
		if err := rs.Scan(&id, &name, &body); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d %s %s", id, name, body))
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func fileRoot(t *testing.T, dir string) Root {
	t.Helper()
	root, err := ParseURL("file://" + dir)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func startReplicating(t *testing.T, s *store, root Root, term int64) *Replicator {
	t.Helper()
	r, err := StartReplicating(t.Context(), s.path, root, "petstore", term, testLog(t).With("node", "leader"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.close(t)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := r.Close(ctx); err != nil {
			t.Logf("close the replicator: %v", err)
		}
	})
	return r
}

func startFollowing(t *testing.T, root Root, term int64, dir string) *Follower {
	t.Helper()
	f, err := StartFollowing(t.Context(), root, "petstore", term, filepath.Join(dir, database.DataFile), testLog(t).With("node", "follower"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// waitFor polls cond every 10 ms until it holds or within passes.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > within {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

func TestParseURL(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "") // refused with s3:// (TestS3Replica)
	for _, c := range []struct{ in, want, err string }{
		{in: "file:///var/lib/petstore-replica", want: "file:///var/lib/petstore-replica"},
		{in: "file:///var/lib/replica/", want: "file:///var/lib/replica"},
		{in: "s3://bucket/petstore", want: "s3://bucket/petstore"},
		{in: "s3://bucket/a/b?endpoint=http://127.0.0.1:9000&forcePathStyle=true", want: "s3://bucket/a/b?endpoint=http://127.0.0.1:9000&forcePathStyle=true"},
		{in: "", err: "no replica URL"},
		{in: "/var/lib/replica", err: "no scheme"},
		{in: "file://var/lib/replica", err: "names a host"},
		{in: "file:///", err: "no directory"},
		{in: "file:relative/dir", err: "no directory"},
		{in: "file:///x?y=1", err: "query"},
		{in: "s3:///prefix", err: "no bucket"},
		{in: "s3://key:secret@bucket/p", err: "credentials"},
		{in: "sftp://host/path", err: "not sftp://"},
		{in: "http://[::1", err: "not a URL"},
	} {
		root, err := ParseURL(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseURL(%q): error %v, want one saying %q", c.in, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("ParseURL(%q): %v", c.in, err)
		case c.err == "" && root.String() != c.want:
			t.Errorf("ParseURL(%q) = %q, want %q", c.in, root, c.want)
		}
	}
	root := fileRoot(t, "/srv/replica")
	if got, want := root.TermURL("petstore", 42), "file:///srv/replica/petstore/terms/42"; got != want {
		t.Errorf("TermURL = %q, want %q", got, want)
	}
	if _, err := StartReplicating(t.Context(), filepath.Join(t.TempDir(), "data.db"), root, "../x", 1, testLog(t)); err == nil {
		t.Error("StartReplicating took the cluster name ../x")
	}
	if _, err := StartFollowing(t.Context(), root, "petstore", 0, filepath.Join(t.TempDir(), "data.db"), testLog(t)); err == nil {
		t.Error("StartFollowing took term 0")
	}
}

// TestFollowerKeepsUpAndPromotes: a leader writes pets as PocketBase does
// (its pragmas) under Litestream in the same
// process; a follower of the term has each of them within the sync and
// follow intervals of its commit; once the leader is gone, Promote yields
// the leader's database row for row and byte for byte.
func TestFollowerKeepsUpAndPromotes(t *testing.T) {
	slow(t)
	leader := openStore(t, t.TempDir())
	root := fileRoot(t, t.TempDir())
	r := startReplicating(t, leader, root, 7)
	followerDir := t.TempDir()
	f := startFollowing(t, root, 7, followerDir)
	followerDB := filepath.Join(followerDir, database.DataFile)

	// The first round waits for the term's first snapshot and the
	// follower's restore; the others, for a commit to be copied, uploaded
	// and applied.
	bound := MonitorInterval + FollowInterval + time.Second
	var worst time.Duration
	for round := range 5 {
		last := leader.write(t, 40)
		took := waitFor(t, 2*bound, fmt.Sprintf("round %d: the follower has pet %d", round, last), func() bool {
			l := f.Lag()
			return l.Applied > 0 && hasPet(followerDB, last)
		})
		if round == 0 {
			t.Logf("the follower restored the term's first pets %v after their commit", took)
			continue
		}
		if took > bound {
			t.Errorf("round %d: the follower had the last pet %v after its commit, more than %v", round, took, bound)
		}
		worst = max(worst, took)
	}
	t.Logf("a commit reached the follower within %v (bound %v)", worst, bound)
	if l := f.Lag(); l.Err != nil || l.Term != 7 {
		t.Errorf("lag %+v", l)
	}

	want := rows(t, leader.path)
	leader.close(t) // the leader is gone; what it committed was shipped
	closeCtx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := r.Close(closeCtx); err != nil {
		t.Fatal(err)
	}
	st := r.Status()
	if st.Err != nil || st.Shipped == 0 {
		t.Errorf("status after close %+v", st)
	}

	const leaderName = "n0 at http://127.0.0.1:8090 (term 7)"
	if err := f.SetLeader(leaderName); err != nil {
		t.Fatal(err)
	}
	if following, leader, err := Following(followerDir); !following || leader != leaderName || err != nil {
		t.Errorf("Following(the follower's directory) = %v, %q, %v; want true, %q", following, leader, err, leaderName)
	}
	if following, _, err := Following(leader.dir); following || err != nil {
		t.Errorf("Following(the leader's directory) = %v, %v", following, err)
	}
	start := time.Now()
	if err := f.Promote(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Logf("Promote took %v", time.Since(start))
	if following, _, err := Following(followerDir); following || err != nil {
		t.Errorf("Following(the promoted directory) = %v, %v", following, err)
	}
	if err := f.SetLeader(leaderName); err != nil {
		t.Fatal(err)
	}
	if following, _, err := Following(followerDir); following || err != nil {
		t.Errorf("Following(the promoted directory) after SetLeader = %v, %v", following, err)
	}
	got := rows(t, followerDB)
	if len(got) != len(want) || len(want) != 200 {
		t.Fatalf("promoted copy holds %d pets, leader %d, want 200", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("pet %d differs:\n got %.60s\nwant %.60s", i, got[i], want[i])
		}
	}
	for _, p := range []string{followerDB + "-txid", followerDB + "-follow"} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is still there after Promote: %v", p, err)
		}
	}
}

// hasPet reports whether the database at path holds pet id (false while
// it cannot be read).
func hasPet(path string, id int64) bool {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return false
	}
	defer db.Close()
	var n int
	return db.QueryRow(`SELECT count(*) FROM pets WHERE id = ?`, id).Scan(&n) == nil && n == 1
}

// TestPromoteAppliesWhatWasJustShipped: Promote does not wait for the
// follow interval: transactions shipped a moment before are in the copy.
func TestPromoteAppliesWhatWasJustShipped(t *testing.T) {
	leader := openStore(t, t.TempDir())
	root := fileRoot(t, t.TempDir())
	r := startReplicating(t, leader, root, 3)
	leader.write(t, 10)
	if err := r.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	followerDir := t.TempDir()
	f := startFollowing(t, root, 3, followerDir)
	waitFor(t, 5*time.Second, "the follower has restored", func() bool { return f.Lag().Applied > 0 })

	last := leader.write(t, 25)
	if err := r.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	st := r.Status()
	if st.Err != nil || st.Shipped < st.Committed || st.ShippedAt.IsZero() {
		t.Fatalf("status after Sync %+v", st)
	}
	want := rows(t, leader.path)
	start := time.Now()
	if err := f.Promote(t.Context()); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	got := rows(t, filepath.Join(followerDir, database.DataFile))
	if len(got) != 35 || !hasPet(filepath.Join(followerDir, database.DataFile), last) {
		t.Fatalf("promoted copy holds %d pets, want 35 (the last %d)", len(got), last)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("pet %d differs", i)
		}
	}
	if took > FollowInterval {
		t.Errorf("Promote took %v, more than the follow interval", took)
	}
	t.Logf("Promote took %v", took)
}

// tree lists the files under dir with their sizes and times.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = fmt.Sprintf("%d %v", info.Size(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestNewTermShipsToItsOwnPath: the promoted follower replicates its new
// term to a path of its own; the old term's files stay as they were, and a
// term whose path holds transactions cannot be started again.
func TestNewTermShipsToItsOwnPath(t *testing.T) {
	slow(t)
	rootDir := t.TempDir()
	root := fileRoot(t, rootDir)
	leader := openStore(t, t.TempDir())
	r1 := startReplicating(t, leader, root, 1)
	leader.write(t, 20)
	followerDir := t.TempDir()
	f := startFollowing(t, root, 1, followerDir)
	if err := r1.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the follower has caught up", func() bool {
		l := f.Lag()
		return l.Applied > 0 && l.Transactions == 0 && l.Applied == r1.Status().Shipped
	})
	leader.close(t)
	if err := r1.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := f.Promote(t.Context()); err != nil {
		t.Fatal(err)
	}
	term1 := filepath.Join(rootDir, "petstore", "terms", "1")
	before := tree(t, term1)
	if len(before) < 3 {
		t.Fatalf("term 1's replica holds %d entries", len(before))
	}

	if _, err := StartReplicating(t.Context(), leader.path, root, "petstore", 1, testLog(t)); err == nil || !strings.Contains(err.Error(), "already holds transactions") {
		t.Fatalf("a second leader of term 1: %v, want a refusal", err)
	}

	promoted := openStore(t, followerDir)
	r2 := startReplicating(t, promoted, root, 2)
	promoted.write(t, 30)
	if err := r2.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * MonitorInterval) // the replicator's loop runs meanwhile
	if after := tree(t, term1); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("term 1's replica changed:\nbefore %v\nafter  %v", before, after)
	}

	// Term 2 restores to the promoted database: the 20 pets and the 30.
	again := t.TempDir()
	f2 := startFollowing(t, root, 2, again)
	waitFor(t, 5*time.Second, "a follower of term 2 has caught up", func() bool {
		return f2.Lag().Applied > 0 && f2.Lag().Applied == r2.Status().Shipped
	})
	if err := f2.Promote(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, want := rows(t, filepath.Join(again, database.DataFile)), rows(t, promoted.path); len(got) != 50 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("term 2's copy holds %d pets, not the promoted leader's 50", len(got))
	}
}

// TestSetAsideKeepsWhatWasNeverShipped: a former leader's data directory
// holds writes it never shipped; following the new term sets them aside, in
// a file that opens with them, and restores the term's replica cleanly.
func TestSetAsideKeepsWhatWasNeverShipped(t *testing.T) {
	root := fileRoot(t, t.TempDir())

	// The new leader's term, shipped from a database of 12 pets.
	leader := openStore(t, t.TempDir())
	r := startReplicating(t, leader, root, 5)
	leader.write(t, 12)
	if err := r.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}

	// The former leader, as its crash left it: 40 pets, 8 of them still
	// in its WAL only.
	crashed := t.TempDir()
	conn, err := database.Connect(filepath.Join(crashed, database.DataFile))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.DB().SetMaxOpenConns(1)
	former := &store{db: conn.DB()}
	if _, err := former.db.Exec(`CREATE TABLE pets (id INTEGER PRIMARY KEY, name TEXT NOT NULL, body BLOB NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	former.write(t, 32)
	if _, err := former.db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	former.write(t, 8)
	formerDir := t.TempDir()
	for _, name := range []string{database.DataFile, database.DataFile + "-wal"} {
		b, err := os.ReadFile(filepath.Join(crashed, name))
		if err != nil {
			t.Fatal(err)
		}
		if name != database.DataFile && len(b) == 0 {
			t.Fatal("the former leader's WAL is empty")
		}
		if err := os.WriteFile(filepath.Join(formerDir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	formerRows := rows(t, filepath.Join(crashed, database.DataFile))

	// The former leader's Litestream state and an unrelated follower file.
	if err := os.MkdirAll(filepath.Join(formerDir, MetaDirName, "ltx"), 0o700); err != nil {
		t.Fatal(err)
	}

	f := startFollowing(t, root, 5, formerDir)
	entries, err := os.ReadDir(filepath.Join(formerDir, SetAsideDirName))
	if err != nil || len(entries) != 2 { // the database and its WAL
		t.Fatalf("set-aside holds %v (%v), want the database and its WAL", entries, err)
	}
	aside := filepath.Join(formerDir, SetAsideDirName, entries[0].Name())
	if got := rows(t, aside); fmt.Sprint(got) != fmt.Sprint(formerRows) || len(got) != 40 {
		t.Errorf("the set-aside database holds %d pets, want the former leader's 40", len(got))
	}
	if _, err := os.Stat(filepath.Join(formerDir, MetaDirName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Litestream's state of the former leader is still there: %v", err)
	}

	waitFor(t, 5*time.Second, "the follower has restored the term", func() bool {
		l := f.Lag()
		return l.Applied > 0 && l.Applied == r.Status().Shipped
	})
	if err := f.Promote(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, want := rows(t, filepath.Join(formerDir, database.DataFile)), rows(t, leader.path); fmt.Sprint(got) != fmt.Sprint(want) || len(got) != 12 {
		t.Errorf("the restored copy holds %d pets, want the term's 12", len(got))
	}

	// SetAside on a directory without a database has nothing to set aside.
	if p, err := SetAside(t.TempDir()); p != "" || err != nil {
		t.Errorf("SetAside of an empty directory = %q, %v", p, err)
	}
}

// TestLagCountsWhatIsNotApplied: a follower that resumes behind the replica
// reports the transactions and seconds it is behind at once, and none once
// it has caught up.
func TestLagCountsWhatIsNotApplied(t *testing.T) {
	slow(t)
	leader := openStore(t, t.TempDir())
	root := fileRoot(t, t.TempDir())
	r := startReplicating(t, leader, root, 9)
	leader.write(t, 5)
	if err := r.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	followerDir := t.TempDir()
	f := startFollowing(t, root, 9, followerDir)
	waitFor(t, 5*time.Second, "the follower has caught up", func() bool {
		l := f.Lag()
		return l.Applied > 0 && l.Applied == r.Status().Shipped && l.Transactions == 0
	})
	caughtUp := f.Lag()
	if caughtUp.Seconds != 0 || caughtUp.Shipped != caughtUp.Applied {
		t.Errorf("caught up, lag %+v", caughtUp)
	}
	f.Close()

	const syncs = 4
	for range syncs {
		leader.write(t, 3)
		if err := r.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	shipped := r.Status().Shipped

	f = startFollowing(t, root, 9, followerDir)
	waitFor(t, time.Second, "a first lag", func() bool { return !f.Lag().CheckedAt.IsZero() })
	behind := f.Lag()
	if behind.Err != nil || behind.Applied != caughtUp.Applied || behind.Shipped != shipped ||
		behind.Transactions != shipped-caughtUp.Applied || behind.Transactions < syncs {
		t.Errorf("resumed behind: lag %+v, want applied %d, shipped %d", behind, caughtUp.Applied, shipped)
	}
	if behind.Seconds < 0.3 || behind.Seconds > 5 {
		t.Errorf("resumed behind: %.2f s, want the age of the first transaction not applied (0.3 s or more)", behind.Seconds)
	}
	waitFor(t, 2*FollowInterval+time.Second, "the follower has caught up again", func() bool {
		l := f.Lag()
		return l.Applied == shipped && l.Transactions == 0 && l.Seconds == 0
	})
}

// TestUnreachableReplicaIsReported: with the replica's directory gone (a
// file in its place), the leader's Status says why it cannot ship, Sync
// fails, and both recover once the directory is back; a follower's Lag
// says it cannot read the replica.
func TestUnreachableReplicaIsReported(t *testing.T) {
	slow(t)
	leader := openStore(t, t.TempDir())
	rootDir := filepath.Join(t.TempDir(), "replica")
	root := fileRoot(t, rootDir)
	r := startReplicating(t, leader, root, 4)
	leader.write(t, 5)
	if err := r.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	f := startFollowing(t, root, 4, t.TempDir())
	waitFor(t, 5*time.Second, "the follower has restored", func() bool { return f.Lag().Applied > 0 })

	// Moved away in one step: the leader may be writing into it.
	if err := os.Rename(rootDir, rootDir+".gone"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rootDir, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	leader.write(t, 5)
	took := waitFor(t, 3*time.Second, "Status reports the unreachable replica", func() bool { return r.Status().Err != nil })
	st := r.Status()
	t.Logf("after %v: status %+v", took, st)
	if st.Shipped >= st.Committed {
		t.Errorf("status says everything is shipped: %+v", st)
	}
	if err := r.Sync(t.Context()); err == nil {
		t.Error("Sync succeeded with the replica's directory gone")
	}
	waitFor(t, 3*FollowInterval, "Lag reports the unreachable replica", func() bool { return f.Lag().Err != nil })

	if err := os.Remove(rootDir); err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(t.Context()); err != nil {
		t.Fatalf("Sync with the directory back: %v", err)
	}
	if st := r.Status(); st.Err != nil || st.Shipped < st.Committed {
		t.Errorf("status with the directory back %+v", st)
	}
	waitFor(t, 3*FollowInterval, "Lag recovers", func() bool { return f.Lag().Err == nil })
}

// TestSyncShipsTheCallersCommit: creates acknowledged only once shipped
// call Sync from many goroutines at once; once Sync returns, the replica
// restores to a database holding the caller's commit. The Replicator starts
// before the database exists, as the very first leader's does.
func TestSyncShipsTheCallersCommit(t *testing.T) {
	dir := t.TempDir()
	root := fileRoot(t, t.TempDir())
	r, err := StartReplicating(t.Context(), filepath.Join(dir, database.DataFile), root, "petstore", 11, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after the store's cleanup: PocketBase closes first
		if err := r.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	if st := r.Status(); st.Shipped != 0 || st.Err != nil {
		t.Errorf("status before the database exists %+v", st)
	}
	leader := openStore(t, dir)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			res, err := leader.db.Exec(`INSERT INTO pets (name, body) VALUES ('Rex', randomblob(200))`)
			if err != nil {
				t.Error(err)
				return
			}
			id, _ := res.LastInsertId()
			if err := r.Sync(t.Context()); err != nil {
				t.Error(err)
				return
			}
			restored := filepath.Join(t.TempDir(), database.DataFile)
			src, err := newSource(root, "petstore", 11, testLog(t))
			if err != nil {
				t.Error(err)
				return
			}
			opt := litestream.NewRestoreOptions()
			opt.OutputPath = restored
			if err := src.replica.Restore(t.Context(), opt); err != nil {
				t.Error(err)
				return
			}
			if !hasPet(restored, id) {
				t.Errorf("Sync returned, and the replica does not hold pet %d", id)
			}
		})
	}
	wg.Wait()
	if st := r.Status(); st.Err != nil || st.Shipped != st.Committed || st.Shipped == 0 || st.ShippedAt.IsZero() {
		t.Errorf("status %+v", st)
	}
}

// TestConcurrentSyncsShareShipments: callers that come while a shipment
// runs wait together for the next one, which serves them all: 32 callers
// behind a shipment that is held up make one shipment more, not 32, and
// each is answered with the replica holding what it committed.
func TestConcurrentSyncsShareShipments(t *testing.T) {
	leader := openStore(t, t.TempDir())
	root := fileRoot(t, t.TempDir())
	r := startReplicating(t, leader, root, 12)
	leader.write(t, 1)
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	r.shipMu.Lock()
	r.shipFunc = func(ctx context.Context) error {
		once.Do(func() { close(held); <-release })
		return r.shipNow(ctx)
	}
	r.shipMu.Unlock()

	first := make(chan error, 1)
	go func() { first <- r.Sync(t.Context()) }()
	<-held
	const callers = 32
	committed := make([]int64, callers)
	for i := range callers {
		committed[i] = leader.write(t, 1)
	}
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			if err := r.Sync(t.Context()); err != nil {
				t.Error(err)
			}
		})
	}
	waitFor(t, 10*time.Second, "every caller waits for the next shipment", func() bool {
		r.shipMu.Lock()
		defer r.shipMu.Unlock()
		return r.next != nil && r.next.callers == callers
	})
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	st := r.Status()
	if st.Syncs != 2 {
		t.Errorf("%d shipments for 1 caller and %d behind it, want 2", st.Syncs, callers)
	}
	if st.Err != nil || st.Shipped < st.Committed {
		t.Errorf("status %+v", st)
	}
	// What every caller committed is in the replica.
	restored := filepath.Join(t.TempDir(), database.DataFile)
	src, err := newSource(root, "petstore", 12, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	opt := litestream.NewRestoreOptions()
	opt.OutputPath = restored
	if err := src.replica.Restore(t.Context(), opt); err != nil {
		t.Fatal(err)
	}
	for i, id := range committed {
		if !hasPet(restored, id) {
			t.Errorf("caller %d's pet %d is not in the replica", i, id)
		}
	}
}

// TestEarlierTermIsKeptUntilTheNewOneShips: a follower of term 1 told to
// follow term 2 keeps its copy of term 1, and follows it, until term 2 has
// shipped its first snapshot: promoted before, it yields all of term 1;
// once term 2 has shipped, it copies term 2.
func TestEarlierTermIsKeptUntilTheNewOneShips(t *testing.T) {
	slow(t)
	root := fileRoot(t, t.TempDir())
	leader := openStore(t, t.TempDir())
	r1 := startReplicating(t, leader, root, 1)
	leader.write(t, 15)
	if err := r1.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	followerDir := t.TempDir()
	followerDB := filepath.Join(followerDir, database.DataFile)
	f1 := startFollowing(t, root, 1, followerDir)
	waitFor(t, 5*time.Second, "the follower has restored term 1", func() bool { return f1.Lag().Applied > 0 })
	f1.Close()

	// Term 1's leader ships 10 more as it goes; term 2 has shipped nothing.
	last := leader.write(t, 10)
	if err := r1.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	f2 := startFollowing(t, root, 2, followerDir)
	waitFor(t, 5*time.Second, "the follower reads term 1's replica", func() bool { return !f2.Lag().CheckedAt.IsZero() })
	if l := f2.Lag(); l.Term != 1 {
		t.Errorf("lag %+v: want term 1's, whose copy the follower holds", l)
	}
	if err := f2.Promote(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := rows(t, followerDB); len(got) != 25 || !hasPet(followerDB, last) {
		t.Fatalf("promoted before term 2 shipped: %d pets, want all 25 of term 1", len(got))
	}

	// The same, with term 2 shipping a database of its own (3 pets).
	if err := os.Remove(followerDB); err != nil {
		t.Fatal(err)
	}
	f1 = startFollowing(t, root, 1, followerDir)
	waitFor(t, 5*time.Second, "the follower has restored term 1 again", func() bool { return f1.Lag().Applied > 0 })
	f1.Close()
	f2 = startFollowing(t, root, 2, followerDir)
	other := openStore(t, t.TempDir())
	r2 := startReplicating(t, other, root, 2)
	other.write(t, 3)
	if err := r2.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*FollowInterval+time.Second, "the follower follows term 2", func() bool {
		l := f2.Lag()
		return l.Term == 2 && l.Applied > 0 && l.Applied == r2.Status().Shipped
	})
	if err := f2.Promote(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, want := rows(t, followerDB), rows(t, other.path); len(got) != 3 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("promoted after term 2 shipped: %d pets, want term 2's 3", len(got))
	}
}

// BenchmarkCommitThenSync is what a create acknowledged only once shipped
// adds: one commit, then Sync to a file replica, one after the other.
//
//	go test -run '^$' -bench CommitThenSync -count 3 ./internal/replica/
func BenchmarkCommitThenSync(b *testing.B) {
	dir := b.TempDir()
	db, err := database.Connect(filepath.Join(dir, database.DataFile))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.DB().Exec(`CREATE TABLE pets (id INTEGER PRIMARY KEY, name TEXT NOT NULL, body BLOB NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	root, err := ParseURL("file://" + b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	r, err := StartReplicating(b.Context(), filepath.Join(dir, database.DataFile), root, "petstore", 1, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close(context.Background())
	for b.Loop() {
		if _, err := db.DB().Exec(`INSERT INTO pets (name, body) VALUES ('Rex', randomblob(200))`); err != nil {
			b.Fatal(err)
		}
		if err := r.Sync(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
}

// TestNothingToPromote: a new node following a term that has shipped
// nothing has no copy to promote, and says so rather than leaving an empty
// database to start from.
func TestNothingToPromote(t *testing.T) {
	root := fileRoot(t, t.TempDir())
	dir := t.TempDir()
	f := startFollowing(t, root, 8, dir)
	waitFor(t, 5*time.Second, "a first lag", func() bool { return !f.Lag().CheckedAt.IsZero() })
	if l := f.Lag(); l.Applied != 0 || l.Shipped != 0 || l.Err != nil {
		t.Errorf("lag %+v", l)
	}
	if err := f.Promote(t.Context()); !errors.Is(err, ErrNothingShipped) {
		t.Fatalf("Promote: %v, want ErrNothingShipped", err)
	}
	if _, err := os.Stat(filepath.Join(dir, database.DataFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("data.db after Promote: %v", err)
	}
}

// TestPromoteFailsOnADamagedReplica: a replica whose files cannot be
// restored fails Promote at once, saying why, rather than holding it until
// its deadline.
func TestPromoteFailsOnADamagedReplica(t *testing.T) {
	rootDir := t.TempDir()
	root := fileRoot(t, rootDir)
	leader := openStore(t, t.TempDir())
	r := startReplicating(t, leader, root, 6)
	leader.write(t, 10)
	if err := r.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	leader.close(t)
	if err := r.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	damaged := 0
	err := filepath.WalkDir(filepath.Join(rootDir, "petstore", "terms", "6"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".ltx") {
			damaged++
			return os.WriteFile(p, []byte("not an LTX file, but long enough to pass for one's header at a glance: 100 bytes......"), 0o600)
		}
		return err
	})
	if err != nil || damaged == 0 {
		t.Fatalf("damaged %d files: %v", damaged, err)
	}
	f := startFollowing(t, root, 6, t.TempDir())
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	start := time.Now()
	err = f.Promote(ctx)
	t.Logf("Promote: %v after %v", err, time.Since(start))
	if err == nil || errors.Is(err, ErrNothingShipped) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Promote of a damaged replica: %v, want the restore's error", err)
	}
}

// TestEmptiedReplicaIsShippedAgain: the replica's directory removed under a
// shipping leader (a shared volume unmounted, then mounted empty) is made
// again by the next upload, without the term's first transactions; the
// leader notices within its check interval and ships a new snapshot, from
// which the replica restores every pet again.
func TestEmptiedReplicaIsShippedAgain(t *testing.T) {
	slow(t)
	leader := openStore(t, t.TempDir())
	rootDir := filepath.Join(t.TempDir(), "replica")
	root := fileRoot(t, rootDir)
	r := startReplicating(t, leader, root, 12)
	leader.write(t, 20)
	if err := r.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Litestream's first compactions (level 1 and a snapshot, about a
	// second after the start) would write the first transactions again.
	time.Sleep(2 * time.Second)
	if err := os.Rename(rootDir, rootDir+".gone"); err != nil { // in one step: the leader may be writing into it
		t.Fatal(err)
	}
	last := leader.write(t, 5)
	if err := r.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	src, err := newSource(root, "petstore", 12, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	restored := filepath.Join(t.TempDir(), database.DataFile)
	var restoreErr error
	took := waitFor(t, checkEvery+3*time.Second, "the replica restores again", func() bool {
		opt := litestream.NewRestoreOptions()
		opt.OutputPath = restored
		restoreErr = src.replica.Restore(t.Context(), opt)
		return restoreErr == nil
	})
	t.Logf("the replica restored again %v after it was emptied", took)
	if got, want := rows(t, restored), rows(t, leader.path); len(got) != 25 || !hasPet(restored, last) || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the replica restores %d pets, want the leader's 25", len(got))
	}
}

// The databases set aside are listed oldest first with their WALs' bytes,
// and pruned by age: each with its WAL, the younger kept, files SetAside
// did not name left alone.
func TestSetAsideListedAndPruned(t *testing.T) {
	dataDir := t.TempDir()
	dbPath := filepath.Join(dataDir, database.DataFile)
	var paths []string
	for i := range 3 {
		if err := os.WriteFile(dbPath, []byte(strings.Repeat("d", 100*(i+1))), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dbPath+"-wal", []byte("wal"), 0o600); err != nil {
			t.Fatal(err)
		}
		aside, err := SetAside(dataDir)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, aside)
		time.Sleep(10 * time.Millisecond)
	}
	stray := filepath.Join(dataDir, SetAsideDirName, "notes.txt")
	if err := os.WriteFile(stray, []byte("staff's"), 0o600); err != nil {
		t.Fatal(err)
	}
	copies, err := ListSetAside(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(copies) != 3 {
		t.Fatalf("listed %+v, want the 3 set aside", copies)
	}
	for i, c := range copies {
		if c.Path != paths[i] || c.Bytes != int64(100*(i+1)+3) || time.Since(c.At) > time.Minute {
			t.Errorf("copy %d: %+v, want %s of %d bytes set aside just now", i, c, paths[i], 100*(i+1)+3)
		}
	}
	// Kept for longer than the oldest is old, but not the others: the
	// oldest goes, with its WAL.
	now := copies[1].At.Add(time.Hour)
	removed, err := PruneSetAside(dataDir, now.Sub(copies[0].At)-time.Millisecond, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0].Path != paths[0] {
		t.Fatalf("pruned %+v, want the oldest only", removed)
	}
	for _, p := range []string{paths[0], paths[0] + "-wal"} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there (%v)", p, err)
		}
	}
	if removed, err := PruneSetAside(dataDir, 0, time.Now().Add(time.Second)); err != nil || len(removed) != 2 {
		t.Fatalf("pruning every one removed %+v (%v)", removed, err)
	}
	if _, err := os.Stat(stray); err != nil {
		t.Errorf("a file SetAside did not name was removed: %v", err)
	}
}

// A former leader whose term's replica holds its database whole (it
// shipped everything before it stopped) sets nothing aside when it
// follows: the database goes and the copy is restored. One that committed
// what it never shipped (a crash, copied here as it left the directory) is
// set aside as before.
func TestARejoinThatShippedEverythingSetsNothingAside(t *testing.T) {
	root := fileRoot(t, t.TempDir())
	leader := openStore(t, t.TempDir())
	r, err := StartReplicating(t.Context(), leader.path, root, "petstore", 5, testLog(t).With("node", "leader"))
	if err != nil {
		t.Fatal(err)
	}
	leader.write(t, 20)
	if err := r.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	leader.write(t, 3)
	// The clean stop: everything shipped, the database closed.
	want := rows(t, leader.path)
	leader.close(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The same directory with 2 more commits that never reached the
	// replica, as a crash would leave it.
	crashed := t.TempDir()
	for _, name := range []string{database.DataFile, database.DataFile + "-led"} {
		b, err := os.ReadFile(filepath.Join(leader.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(crashed, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	unshipped := openStore(t, crashed)
	unshipped.write(t, 2)
	unshipped.close(t)

	f := startFollowing(t, root, 5, leader.dir)
	if _, err := os.Stat(filepath.Join(leader.dir, SetAsideDirName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a leader that shipped everything set its database aside: %v", err)
	}
	waitFor(t, 5*time.Second, "the copy is restored", func() bool { return f.Lag().Applied > 0 })
	if err := f.Promote(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := rows(t, leader.path); fmt.Sprint(got) != fmt.Sprint(want) || len(got) != 23 {
		t.Errorf("the copy holds %d pets, want the leader's 23", len(got))
	}

	startFollowing(t, root, 5, crashed)
	entries, err := os.ReadDir(filepath.Join(crashed, SetAsideDirName))
	if err != nil || len(entries) == 0 {
		t.Fatalf("a leader that crashed with commits never shipped: set-aside holds %v (%v), want its database", entries, err)
	}
	if got := rows(t, filepath.Join(crashed, SetAsideDirName, entries[0].Name())); len(got) != 25 {
		t.Errorf("the set-aside database holds %d pets, want 25", len(got))
	}
}
