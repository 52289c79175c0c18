package datadir_test

import (
	"errors"
	"testing"
	"time"

	"petstore/internal/datadir"
)

// A held use lock becomes exclusive only while no other holder has the
// directory open, stays shared when it cannot, and is shared again on
// Shared: flock locks of two descriptors conflict as those of two
// processes do.
func TestUseExclusiveOnlyWhenAlone(t *testing.T) {
	dir := t.TempDir()
	enter := func() *datadir.Use {
		t.Helper()
		u, err := datadir.Enter(dir, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { u.Release() })
		return u
	}
	mine, other := enter(), enter()
	if err := mine.Exclusive(); !errors.Is(err, datadir.ErrInUse) {
		t.Fatalf("exclusive beside another holder: %v, want ErrInUse", err)
	}
	if _, err := datadir.TakeOver(dir); !errors.Is(err, datadir.ErrInUse) {
		t.Fatalf("an offline restore after the refused Exclusive: %v, want ErrInUse (the lock held shared again)", err)
	}
	other.Release()
	if err := mine.Exclusive(); err != nil {
		t.Fatalf("exclusive alone: %v", err)
	}
	if _, err := datadir.Enter(dir, 50*time.Millisecond); err == nil {
		t.Fatal("a start entered the directory while it was held exclusively")
	}
	if err := mine.Shared(); err != nil {
		t.Fatal(err)
	}
	enter()
}
