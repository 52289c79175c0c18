package database_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"petstore/internal/database"
)

// Inserts that each run in a savepoint and fire a trigger, as the pets
// writer's do, reuse the C allocator's pages: they do not map fresh memory
// (and unmap it again) each time, which the kernel counts as page faults.
func TestInsertsReuseTheAllocatorsPages(t *testing.T) {
	conn, err := database.Connect(filepath.Join(t.TempDir(), database.DataFile))
	if err != nil {
		t.Fatal(err)
	}
	db := conn.DB()
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		"CREATE TABLE pets (id TEXT PRIMARY KEY, name TEXT, status TEXT)",
		"CREATE INDEX idx_pets_status_id ON pets (status, id)",
		"CREATE TABLE changes (tbl TEXT PRIMARY KEY, n INTEGER NOT NULL DEFAULT 0)",
		"INSERT INTO changes (tbl) VALUES ('pets')",
		"CREATE TRIGGER pets_insert AFTER INSERT ON pets BEGIN UPDATE changes SET n = n + 1 WHERE tbl = 'pets'; END",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	id := 0
	name := strings.Repeat("Rex ", 100) // 11 rows a page: the measured batches find the page cache full
	batches := func(n int) {
		for range n {
			tx, err := db.Begin()
			if err != nil {
				t.Fatal(err)
			}
			for range 8 {
				id++
				for _, q := range []string{"SAVEPOINT pet", fmt.Sprintf("INSERT INTO pets VALUES ('%015d', '%s', 'available')", id, name), "RELEASE pet"} {
					if _, err := tx.Exec(q); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	batches(200) // the statements, and more pages than the page cache holds
	before := minorFaults(t)
	const measured = 250
	batches(measured)
	faults := minorFaults(t) - before
	t.Logf("%d page faults in %d transactions", faults, measured)
	if faults > 2*measured {
		t.Errorf("%d page faults in %d transactions of 8 inserts, want at most two a transaction", faults, measured)
	}
}

func minorFaults(t *testing.T) int64 {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return ru.Minflt
}
