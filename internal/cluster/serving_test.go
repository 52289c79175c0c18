package cluster_test

import (
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
