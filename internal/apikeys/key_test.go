package apikeys

import (
	"regexp"
	"strings"
	"testing"
)

// keyShape is the shape of a key as a regular expression: the rule that
// wellFormed's loop implements, kept here as its oracle.
var keyShape = regexp.MustCompile(`^` + Prefix + `[A-Za-z0-9_-]{43}$`)

func FuzzWellFormed(f *testing.F) {
	for _, s := range []string{
		Generate(), Generate(), "", Prefix, "pet_", "PET_" + Generate()[4:], "pat_" + Generate()[4:],
		Generate() + "A", Generate()[:keyLen-1], Prefix + strings.Repeat("-", 43), Prefix + strings.Repeat("_", 43),
		Prefix + strings.Repeat("A", 42) + "=", Prefix + strings.Repeat("A", 42) + "+", Prefix + strings.Repeat("A", 42) + "/",
		Prefix + strings.Repeat("A", 42) + "é", Prefix + strings.Repeat("A", 42) + "\x00", Prefix + strings.Repeat("9", 42) + " ",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := wellFormed(s), keyShape.MatchString(s); got != want {
			t.Errorf("wellFormed(%q) = %v, want %v", s, got, want)
		}
	})
}

func TestGeneratedKeysAreWellFormed(t *testing.T) {
	for range 1000 {
		if k := Generate(); !wellFormed(k) {
			t.Fatalf("Generate() = %q, not well formed", k)
		}
	}
}

// BenchmarkWellFormed is the check of a bearer key's shape, made on every
// /v1 request before its lookup.
func BenchmarkWellFormed(b *testing.B) {
	key := Generate()
	for b.Loop() {
		if !wellFormed(key) {
			b.Fatal("not well formed")
		}
	}
}
