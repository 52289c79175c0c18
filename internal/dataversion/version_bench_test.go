package dataversion_test

import (
	"fmt"
	"testing"

	"petstore/internal/dataversion"
)

// BenchmarkVersion is one read of the data version, alone.
func BenchmarkVersion(b *testing.B) {
	db, _ := openTwoPools(b)
	w := newWatch(b, db)
	for b.Loop() {
		if _, err := w.Version(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVersionAfterACommit is what a request pays for the Version read
// right after a commit of a table no cache watches (a pet's create).
func BenchmarkVersionAfterACommit(b *testing.B) {
	db, other := openTwoPools(b)
	exec(b, db, "CREATE TABLE keys (v INTEGER)")
	exec(b, db, "CREATE TABLE plans (v INTEGER)")
	countChanges(b, db, "keys", "plans")
	w := newWatch(b, db)
	for b.Loop() {
		b.StopTimer()
		exec(b, other, "INSERT INTO t VALUES (1)")
		b.StartTimer()
		if _, err := w.Version(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInsert is what a Rows counter's triggers cost a writer per new
// row (a pet's create): 100 inserts a transaction of one prepared
// statement, as the pets writer's.
func BenchmarkInsert(b *testing.B) {
	for _, counted := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "counted"}[counted]
		b.Run(name, func(b *testing.B) {
			db, _ := openTwoPools(b)
			db.SetMaxOpenConns(1)
			exec(b, db, "PRAGMA temp_store = MEMORY") // as the app's connections: a trigger's statement journal is in memory
			exec(b, db, "CREATE TABLE pets (id TEXT PRIMARY KEY NOT NULL, name TEXT)")
			if counted {
				countChanges(b, db, dataversion.Rows("pets"))
			}
			insert, err := db.Prepare("INSERT INTO pets VALUES (?, 'Rex')") // once, as the pets writer's
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for b.Loop() {
				tx, err := db.Begin()
				if err != nil {
					b.Fatal(err)
				}
				stmt := tx.Stmt(insert)
				for range 100 {
					n++
					if _, err := stmt.Exec(fmt.Sprintf("%015d", n*7919%1000000007)); err != nil {
						b.Fatal(err)
					}
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
