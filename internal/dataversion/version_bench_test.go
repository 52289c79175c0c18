package dataversion_test

import (
	"testing"

	"petstore/internal/dataversion"
)

// BenchmarkVersion is one read of the data version, alone.
func BenchmarkVersion(b *testing.B) {
	db, _ := openTwoPools(b)
	w, err := dataversion.NewWatch(db)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
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
	w, err := dataversion.NewWatch(db)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	for b.Loop() {
		b.StopTimer()
		exec(b, other, "INSERT INTO t VALUES (1)")
		b.StartTimer()
		if _, err := w.Version(); err != nil {
			b.Fatal(err)
		}
	}
}
