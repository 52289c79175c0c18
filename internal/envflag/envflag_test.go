package envflag_test

import (
	"slices"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"petstore/internal/envflag"
)

func TestName(t *testing.T) {
	for flag, want := range map[string]string{
		"dir":             "PETSTORE_DIR",
		"ratelimit-redis": "PETSTORE_RATELIMIT_REDIS",
		"encryptionEnv":   "PETSTORE_ENCRYPTION_ENV",
		"queryTimeout":    "PETSTORE_QUERY_TIMEOUT",
		"http":            "PETSTORE_HTTP",
	} {
		if got := envflag.Name(flag); got != want {
			t.Errorf("Name(%q) = %q, want %q", flag, got, want)
		}
	}
}

// TestApply: a variable sets a flag the command line left alone, replaces
// a list's default rather than adding to it, loses to the command line,
// and names itself when its value is refused.
func TestApply(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	origins := fs.StringSlice("origins", []string{"*"}, "")
	timeout := fs.Duration("shutdown-timeout", 10*time.Second, "")
	http := fs.String("http", "", "")
	skipped := fs.String("dir", "pb_data", "")
	if err := fs.Parse([]string{"--http", "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PETSTORE_ORIGINS", "https://a.example,https://b.example")
	t.Setenv("PETSTORE_SHUTDOWN_TIMEOUT", "3s")
	t.Setenv("PETSTORE_HTTP", "0.0.0.0:2")
	t.Setenv("PETSTORE_DIR", "/elsewhere")
	if err := envflag.Apply(fs, "dir"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(*origins, []string{"https://a.example", "https://b.example"}) || *timeout != 3*time.Second ||
		*http != "127.0.0.1:1" || *skipped != "pb_data" {
		t.Fatalf("origins %v, timeout %v, http %q, dir %q", *origins, *timeout, *http, *skipped)
	}
	if d := fs.Lookup("shutdown-timeout").DefValue; d != "10s" {
		t.Fatalf("the default became %q; --help would show the variable's value", d)
	}

	t.Setenv("PETSTORE_SHUTDOWN_TIMEOUT", "soon")
	fs2 := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs2.Duration("shutdown-timeout", time.Second, "")
	err := envflag.Apply(fs2)
	if err == nil || err.Error() != `invalid PETSTORE_SHUTDOWN_TIMEOUT "soon" (for --shutdown-timeout): time: invalid duration "soon"` {
		t.Fatalf("Apply = %v", err)
	}
}
