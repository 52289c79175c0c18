package realserver_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"petstore/testkit/realserver"
	"petstore/testkit/redistest"
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

// Redis lost and found again, as the binary tells it: the
// petstore_ratelimit_redis_lost_total counter and the redis_up gauge, and a
// "Redis answers again" line that says what the instance counted meanwhile.
func TestRedisLostCountedAndLogged(t *testing.T) {
	srv := redistest.Start(t)
	dir := t.TempDir()
	key, _ := createKey(t, dir, "--plan", "free", "--per-minute", "30")
	metricsAddr := freeAddr(t)
	p := start(t, dir, "--metrics-addr", metricsAddr,
		"--ratelimit-redis", srv.URL(0)+"?dial_timeout=2s&read_timeout=2s&write_timeout=2s")
	ctx := context.Background()
	send := func(n int) {
		t.Helper()
		for range n {
			if status, body, err := p.Do(ctx, http.MethodGet, "/v1/pets", key, nil); err != nil || status != http.StatusOK {
				t.Fatalf("GET /v1/pets: %d %v %s", status, err, body)
			}
		}
	}
	gauges := func() (up, lost float64) {
		f := scrape(t, metricsAddr)
		return f["petstore_ratelimit_redis_up"].GetMetric()[0].GetGauge().GetValue(),
			f["petstore_ratelimit_redis_lost_total"].GetMetric()[0].GetCounter().GetValue()
	}
	send(2)
	if up, lost := gauges(); up != 1 || lost != 0 {
		t.Fatalf("before: redis_up %v, redis_lost_total %v; want 1, 0", up, lost)
	}
	srv.Stop()
	send(3)
	if up, lost := gauges(); up != 0 || lost != 1 {
		t.Fatalf("Redis stopped: redis_up %v, redis_lost_total %v; want 0, 1", up, lost)
	}
	srv.Restart(t)
	deadline := time.Now().Add(30 * time.Second)
	for up, _ := gauges(); up != 1; up, _ = gauges() {
		if time.Now().After(deadline) {
			t.Fatalf("the binary does not count in Redis again:\n%s", p.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, lost := gauges(); lost != 1 {
		t.Fatalf("after: redis_lost_total %v, want 1", lost)
	}
	var line string
	for l := range strings.Lines(p.Output()) {
		if strings.Contains(l, "Redis answers again") {
			line = l
		}
	}
	for _, want := range []string{"admitted=3", "refused=0", "keysSent=1", "redis=" + srv.Addr} {
		if !strings.Contains(line, want) {
			t.Errorf("the answers-again line %q does not say %s", line, want)
		}
	}
}
