package main

import (
	"database/sql"
	"path/filepath"
	"testing"
)

// Every SQLite connection in the process, whatever its DSN asks (here
// PocketBase's 32 MB), gets the page cache pagecache.go sets.
func TestEveryConnectionGetsThePageCache(t *testing.T) {
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "data.db")+"?_pragma=cache_size(-32000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var kib int
	if err := db.QueryRow("PRAGMA cache_size").Scan(&kib); err != nil {
		t.Fatal(err)
	}
	if kib != -pageCacheKiB {
		t.Fatalf("PRAGMA cache_size = %d, want %d", kib, -pageCacheKiB)
	}
}
