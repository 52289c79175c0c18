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
