package realserver_test

import (
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"

	"petstore/internal/realserver"
)

// serve refuses to start when the Redis named by PETSTORE_RATELIMIT_REDIS
// does not answer: exit status 1 and a message naming it, and neither that
// nor --help shows the password in its URL.
func TestServeRefusesToStartWithoutItsRedis(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	t.Setenv("PETSTORE_RATELIMIT_REDIS", fmt.Sprintf("redis://:hunter2secret@%s/0", addr))
	dir := t.TempDir()

	_, stderr, err := realserver.Run(bin, dir, "serve", "--http", "127.0.0.1:0")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("serve: %v, want exit status 1", err)
	}
	if want := "Error: rate-limit Redis at " + addr + " is unreachable"; !strings.Contains(stderr, want) {
		t.Fatalf("stderr %q does not say %q", stderr, want)
	}
	if strings.Contains(stderr, "hunter2secret") {
		t.Fatalf("stderr shows the Redis password: %q", stderr)
	}

	stdout, stderr, err := realserver.Run(bin, dir, "serve", "--help")
	if err != nil || !strings.Contains(stdout+stderr, "--ratelimit-redis") || strings.Contains(stdout+stderr, "hunter2secret") {
		t.Fatalf("serve --help: %v; must list --ratelimit-redis without the password:\n%s%s", err, stdout, stderr)
	}
}
