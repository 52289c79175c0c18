package realserver_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestVersionNamesTheCommit: a binary built in a checkout names the commit
// it was built from, in `--version` and `version` alike.
func TestVersionNamesTheCommit(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	commit := strings.TrimSpace(string(head))
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "commit "+commit) || !strings.Contains(string(out), "go1.") {
			t.Errorf("petstore %v: %v, %q; want the commit %s and the Go version", args, err, out, commit)
		}
	}
}

// TestHealthAnswersOverTheKeylessLimit: /healthz and /readyz answer a client
// whose address is over the keyless limit, are never counted against it,
// and `petstore healthcheck` exits 0 on a ready server and 1 on none.
func TestHealthAnswersOverTheKeylessLimit(t *testing.T) {
	dir := t.TempDir()
	p := start(t, dir, "--ratelimit-anonymous", "3")
	ctx := context.Background()
	for range 3 {
		p.Do(ctx, http.MethodGet, "/v1/pets", "", nil)
	}
	if status, _, _ := p.Do(ctx, http.MethodGet, "/v1/pets", "", nil); status != http.StatusTooManyRequests {
		t.Fatalf("the fourth keyless request: %d, want 429", status)
	}
	for range 20 {
		if status, body, err := p.Do(ctx, http.MethodGet, "/healthz", "", nil); status != http.StatusOK || err != nil {
			t.Fatalf("/healthz over the keyless limit: %d %v %s", status, err, body)
		}
		status, body, err := p.Do(ctx, http.MethodGet, "/readyz", "", nil)
		var ready struct{ Status, Database, RateLimiter string }
		if status != http.StatusOK || err != nil || json.Unmarshal(body, &ready) != nil ||
			ready != (struct{ Status, Database, RateLimiter string }{"ready", "ok", "memory"}) {
			t.Fatalf("/readyz over the keyless limit: %d %v %s", status, err, body)
		}
	}
	if _, _, status := petstore(t, dir, "healthcheck", "--url", p.URL+"/readyz"); status != 0 {
		t.Errorf("healthcheck of a ready server: exit status %d", status)
	}
	// A base URL is checked at its /readyz, quietly.
	if stdout, stderr, status := petstore(t, dir, "healthcheck", "--url", p.URL); status != 0 || stdout != "" {
		t.Errorf("healthcheck of a base URL: exit status %d, stdout %q, stderr %q; want 0 and nothing printed", status, stdout, stderr)
	}
	// Without --url, the address serve takes from PETSTORE_HTTP.
	check := exec.Command(bin, "healthcheck")
	check.Env = append(os.Environ(), "PETSTORE_HTTP="+p.Addr)
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("healthcheck with PETSTORE_HTTP=%s: %v %s", p.Addr, err, out)
	}
	if _, stderr, status := petstore(t, dir, "healthcheck", "--url", "http://127.0.0.1:1/readyz", "--timeout", "2s"); status != 1 {
		t.Errorf("healthcheck of no server: exit status %d, want 1 (%s)", status, stderr)
	}
}

// TestReadyzRefusesWhileDraining: from SIGTERM on, for --drain-delay,
// /readyz answers 503 with the Error body while /v1 is still served; then
// the server stops with status 0.
func TestReadyzRefusesWhileDraining(t *testing.T) {
	dir := t.TempDir()
	key, _ := createKey(t, dir, "--plan", "business")
	p := start(t, dir, "--drain-delay", "3s")
	ctx := context.Background()
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		status, body, err := p.Do(ctx, http.MethodGet, "/readyz", "", nil)
		if status == http.StatusServiceUnavailable {
			var e struct {
				Code, Message string
				Status        int
			}
			if err := json.Unmarshal(body, &e); err != nil || e.Code != "not_ready" || e.Status != 503 || e.Message == "" {
				t.Errorf("/readyz while draining: %s", body)
			}
			break
		}
		if status != http.StatusOK || time.Now().After(deadline) {
			t.Fatalf("/readyz after SIGTERM: %d %v %s, want 503 within 2 s", status, err, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if status, body, err := p.Do(ctx, http.MethodGet, "/v1/pets", key, nil); status != http.StatusOK {
		t.Errorf("/v1 while draining: %d %v %s, want still served", status, err, body)
	}
	if code, err := p.Wait(30 * time.Second); err != nil || code != 0 {
		t.Fatalf("exit: %d %v:\n%s", code, err, p.Output())
	}
}

// Under systemd's Type=notify, serve says READY=1 once it listens and
// STOPPING=1 at SIGTERM, on the socket NOTIFY_SOCKET names.
func TestServeNotifiesSystemd(t *testing.T) {
	read := listenAsSystemd(t)
	p := start(t, t.TempDir())
	read("READY=1")
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	read("STOPPING=1")
}

// listenAsSystemd listens on a notification socket, as systemd does for a
// Type=notify unit, and names it in NOTIFY_SOCKET for the processes the
// test starts from now on. Its read fails the test unless the next message
// holds want within 20 s.
func listenAsSystemd(t *testing.T) (read func(want string)) {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: socket, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", socket)
	return func(want string) {
		t.Helper()
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		buf := make([]byte, 256)
		n, err := conn.Read(buf)
		if err != nil || !strings.Contains(string(buf[:n]), want) {
			t.Fatalf("systemd heard %q (%v), want %s", buf[:n], err, want)
		}
	}
}
