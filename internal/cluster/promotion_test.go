package cluster_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	clientv3 "go.etcd.io/etcd/client/v3"
	_ "modernc.org/sqlite"

	"petstore/internal/cluster"
	"petstore/internal/database"
	"petstore/internal/replica"
	"petstore/testkit/etcdtest"
)

// A new leader opens its fence only once its term's replica holds its
// database: until its first shipment lands, a node promoting from the
// replica would find none of the term's writes, so a leader lost in its
// first seconds would take with it what it acknowledged long before the
// documented window (the Jepsen-style test's seed 7 lost four creates that
// way). Here, the moment the node serves, the term's replica holds the
// shipment, and a copy restored from it holds every row.
func TestANewLeaderServesOnceItsTermsReplicaHoldsItsDatabase(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	dataDir, replicaDir := t.TempDir(), t.TempDir()
	const rows = 20_000 // 20 MB: a copy that takes Litestream more than one MonitorInterval
	writeDatabase(t, filepath.Join(dataDir, database.DataFile), rows)

	flags := nodeFlags(t, etcd, "a", "http://127.0.0.1:1")
	flags.ReplicaURL = "file://" + replicaDir
	cfg, err := flags.Config("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	p, err := cluster.Start(cfg, dataDir, slog.New(slog.NewTextHandler(logs, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	term, err := p.WaitElected(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p.Serving()
	if !p.Node.MayWrite() {
		t.Fatalf("the leader's fence is closed after Serving; log:\n%s", logs)
	}
	st, ok := p.Data.Shipping()
	if !ok || st.Term != term || st.Shipped == 0 || st.Shipped < st.Committed || st.Err != nil {
		t.Fatalf("when the leader serves, its term's shipping is %+v (shipping: %v), want the database shipped", st, ok)
	}
	if !strings.Contains(logs.String(), "the term's replica holds the database") {
		t.Errorf("the log does not say the first shipment landed:\n%s", logs)
	}

	// What a node promoting now would get.
	root, err := replica.ParseURL(flags.ReplicaURL)
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(t.TempDir(), database.DataFile)
	f, err := replica.StartFollowing(ctx, root, flags.Name, term, copyPath, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, copyPath); n != rows {
		t.Errorf("the term's replica restores %d rows, want %d", n, rows)
	}
}

// heldS3 is an S3 API on loopback (gofakes3) that can hold every request,
// or every write, until released: a replica that stops answering, or that
// its leader can no longer write to.
type heldS3 struct {
	URL string // the replica URL of its bucket

	mu         sync.Mutex
	released   chan struct{} // nil: requests are served
	writesOnly bool          // reads are served while released is not nil
}

func startHeldS3(t *testing.T) *heldS3 {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket("pets"); err != nil {
		t.Fatal(err)
	}
	h := &heldS3{}
	s3 := gofakes3.New(backend).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		released := h.released
		if h.writesOnly && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			released = nil
		}
		h.mu.Unlock()
		if released != nil {
			select {
			case <-r.Context().Done():
			case <-released:
			}
			http.Error(w, "held", http.StatusServiceUnavailable)
			return
		}
		s3.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(h.release) // before the server's Close, which waits for the requests held
	t.Setenv("LITESTREAM_ACCESS_KEY_ID", "test")
	t.Setenv("LITESTREAM_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_CA_BUNDLE", "")
	h.URL = "s3://pets/cluster?endpoint=" + srv.URL + "&region=us-east-1&forcePathStyle=true"
	return h
}

func (h *heldS3) hold() { h.holdRequests(false) }

func (h *heldS3) holdWrites() { h.holdRequests(true) }

func (h *heldS3) holdRequests(writesOnly bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released == nil {
		h.released = make(chan struct{})
	}
	h.writesOnly = writesOnly
}

func (h *heldS3) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released != nil {
		close(h.released)
		h.released = nil
	}
}

// startProcess starts node name of the test cluster on dataDir, as serve
// does, replicating to replicaURL; its log is returned.
func startProcess(t *testing.T, etcd *etcdtest.Cluster, name, dataDir, replicaURL string, steppedDown func()) (*cluster.Process, *syncBuffer) {
	t.Helper()
	flags := nodeFlags(t, etcd, name, "http://127.0.0.1:1")
	flags.ReplicaURL = replicaURL
	cfg, err := flags.Config("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	p, err := cluster.Start(cfg, dataDir, slog.New(slog.NewTextHandler(logs, nil)), steppedDown)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, logs
}

// startServing starts node name on dataDir, holding a database, and waits
// until it serves as the leader.
func startServing(t *testing.T, etcd *etcdtest.Cluster, name, dataDir, replicaURL string) *cluster.Process {
	t.Helper()
	writeDatabase(t, filepath.Join(dataDir, database.DataFile), 100)
	p, _ := startProcess(t, etcd, name, dataDir, replicaURL, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := p.WaitElected(ctx); err != nil {
		t.Fatal(err)
	}
	p.Serving()
	return p
}

// A node that wins while the replica does not answer (an S3 endpoint that
// holds every request) cannot apply what the last term shipped: it gives
// the election up within the promotion's bound, its lease revoked, so that
// another node may win at once, and its process is to be replaced (it
// follows again), rather than hold the cluster without a leader.
func TestAWinnerThatCannotPromoteGivesTheElectionUp(t *testing.T) {
	cluster.SetPromoteTimeout(3 * time.Second)
	t.Cleanup(func() { cluster.SetPromoteTimeout(30 * time.Second) })
	etcd := etcdtest.Start(t, 1)
	s3 := startHeldS3(t)
	leader := startServing(t, etcd, "a", t.TempDir(), s3.URL)
	var gaveUp atomic.Bool
	follower, logs := startProcess(t, etcd, "b", t.TempDir(), s3.URL, func() { gaveUp.Store(true) })
	waitFor(t, 10*time.Second, "b waits in the election", func() bool {
		return strings.Contains(logs.String(), "Cluster: campaigning")
	})
	s3.hold()
	if err := leader.Close(); err != nil { // the lease revoked: b wins at once
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	began := time.Now()
	_, err := follower.WaitElected(ctx)
	took := time.Since(began)
	if !errors.Is(err, cluster.ErrSteppedDown) || !gaveUp.Load() {
		t.Fatalf("a winner that cannot promote: WaitElected %v after %s (stepped down: %v), want ErrSteppedDown within the bound; log:\n%s",
			err, took, gaveUp.Load(), logs)
	}
	if took > 3*time.Second+testTTL {
		t.Errorf("gave the election up %s after the leader left, want within the 3 s bound", took)
	}
	if !strings.Contains(logs.String(), "cannot promote; giving the election up") {
		t.Errorf("the log does not say why b gave the election up:\n%s", logs)
	}
	// Its lease revoked: nobody holds the election, nobody is registered.
	client := etcd.Client(t, "", "")
	for _, prefix := range []string{"/test/leader/", "/test/nodes/"} {
		resp, err := client.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Count != 0 {
			t.Errorf("%d keys under %s after b gave the election up, want none", resp.Count, prefix)
		}
	}
	t.Logf("b gave the election up %s after the leader left", took)
}

// A follower that cannot read the replica any more does not know how far
// behind it is: once its last reading is older than MaxLagOnFailover, it is
// not eligible, and leaves the election; it campaigns again once the
// replica answers.
func TestAFollowerCutFromTheReplicaLeavesTheElection(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	s3 := startHeldS3(t)
	startServing(t, etcd, "a", t.TempDir(), s3.URL)
	follower, logs := startProcess(t, etcd, "b", t.TempDir(), s3.URL, nil)
	waitFor(t, 10*time.Second, "b waits in the election", func() bool {
		return strings.Contains(logs.String(), "Cluster: campaigning")
	})
	s3.hold()
	took := waitFor(t, cluster.MaxLagOnFailover+3*time.Second, "b leaves the election", func() bool {
		return strings.Contains(logs.String(), "Cluster: leaving the election")
	})
	if err := follower.Data.Eligible(follower.Node.Status().Served); err == nil || !strings.Contains(err.Error(), "has not answered") {
		t.Errorf("b's eligibility while the replica holds every request: %v", err)
	}
	t.Logf("b left the election %s after the replica stopped answering", took)
	s3.release()
	waitFor(t, 10*time.Second, "b campaigns again", func() bool {
		return strings.Count(logs.String(), "Cluster: campaigning") == 2
	})
}

// A follower knows when the leader stops shipping, from the leader's own
// registration: once the replica lacks more than MaxLagOnFailover of the
// leader's commits, the follower says so (/readyz's words, the metric's
// figure) and leaves the election, and does not win once that leader is
// gone: promoting the replica would lose those commits. A follower started
// afresh knows nothing of it, and wins: that is how staff accept the loss.
func TestAFollowerKnowsTheLeaderStoppedShipping(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	s3 := startHeldS3(t)
	leaderDir := t.TempDir()
	leader := startServing(t, etcd, "a", leaderDir, s3.URL)
	followerDir := t.TempDir()
	follower, logs := startProcess(t, etcd, "b", followerDir, s3.URL, nil)
	waitFor(t, 10*time.Second, "b waits in the election", func() bool {
		return strings.Contains(logs.String(), "Cluster: campaigning")
	})
	s3.holdWrites()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(leaderDir, database.DataFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO filler (body) VALUES (randomblob(10))`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	took := waitFor(t, cluster.MaxLagOnFailover+5*time.Second, "b leaves the election", func() bool {
		return strings.Contains(logs.String(), "Cluster: leaving the election")
	})
	t.Logf("b left the election %s after the leader's writes to the replica stopped", took)
	if u := follower.Node.Status().LeaderUnshipped; u <= cluster.MaxLagOnFailover {
		t.Errorf("b's LeaderUnshipped %s, want more than %s", u, cluster.MaxLagOnFailover)
	}
	if !strings.Contains(logs.String(), "were not in the replica") {
		t.Errorf("b's log does not say why it left:\n%s", logs)
	}
	if err := leader.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(testTTL + time.Second)
	if term := follower.Node.Status().Term; term != 0 {
		t.Fatalf("b won term %d with a replica that lacks the leader's last commits", term)
	}
	s3.release()
	if err := follower.Close(); err != nil {
		t.Fatal(err)
	}
	restarted, _ := startProcess(t, etcd, "b", followerDir, s3.URL, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := restarted.WaitElected(ctx); err != nil {
		t.Fatalf("b restarted does not win: %v", err)
	}
}

// writeDatabase makes a SQLite database in WAL mode at path with n rows of
// 1 KB each.
func writeDatabase(t *testing.T, path string, n int) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE filler (id INTEGER PRIMARY KEY, body BLOB)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < ?)
		INSERT INTO filler SELECT i, randomblob(1000) FROM n`, n); err != nil {
		t.Fatal(err)
	}
}

func countRows(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM filler`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Every node of a cluster uses the same replica: once a leader served, a
// node started with another --replica-url refuses to start, naming both,
// and one with the same starts; before any leader served, nothing is
// recorded and any node starts.
func TestANodeWithAnotherReplicaRefusesToStart(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	replicaURL, otherURL := "file://"+t.TempDir(), "file://"+t.TempDir()
	// start starts a node and, once started, stops it (it would win).
	start := func(name, url string) error {
		flags := nodeFlags(t, etcd, name, "http://127.0.0.1:1")
		flags.ReplicaURL = url
		cfg, err := flags.Config("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p, err := cluster.Start(cfg, t.TempDir(), slog.New(slog.DiscardHandler), nil)
		if err == nil {
			_ = p.Close()
		}
		return err
	}
	if err := start("before", otherURL); err != nil {
		t.Fatalf("before any leader served, a node with any replica starts: %v", err)
	}
	startServing(t, etcd, "a", t.TempDir(), replicaURL)
	err := start("b", otherURL)
	want := fmt.Sprintf(`--replica-url: this node replicates to %s, and cluster "test" to %s`, otherURL, replicaURL)
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("a node with another replica: %v, want %q…", err, want)
	}
	if err := start("c", replicaURL); err != nil {
		t.Errorf("a node with the cluster's replica: %v", err)
	}
}
