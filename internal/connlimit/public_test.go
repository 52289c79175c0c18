package connlimit_test

import (
	"testing"

	"petstore/internal/connlimit"
)

// The global connection bound stays below the open files limit, keeping a
// quarter of it (at least 256) for everything else, and at most 10,000.
func TestDefaultGlobal(t *testing.T) {
	for soft, want := range map[uint64]int{0: 10000, 300: 44, 512: 256, 1024: 768, 4096: 3072, 20000: 10000, 1 << 20: 10000, 100: 1} {
		if got := connlimit.DefaultGlobal(soft); got != want {
			t.Errorf("DefaultGlobal(%d) = %d, want %d", soft, got, want)
		}
	}
}
