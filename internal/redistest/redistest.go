// Package redistest runs real Redis processes for tests: Debian's
// redis-server and redis-sentinel on free loopback ports, without
// persistence, each stopped by its process id when the test ends. It never
// touches a Redis it did not start.
package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startTimeout bounds how long a process may take to answer PING: the test
// machines are shared and may be slow.
const startTimeout = 30 * time.Second

// Require fails the test in CI, and skips it elsewhere, when redis-server
// or redis-sentinel is not installed.
func Require(t testing.TB) {
	t.Helper()
	for _, name := range []string{"redis-server", "redis-sentinel"} {
		if _, err := exec.LookPath(name); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed (CI installs Debian's redis-server and redis-sentinel)", name)
			}
			t.Skipf("install Debian's redis-server and redis-sentinel to run this test: %v", err)
		}
	}
}

// Server is a redis-server or redis-sentinel process started by a test.
type Server struct {
	Addr string // 127.0.0.1:PORT

	command string
	args    []string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// Start runs redis-server on a free loopback port, without persistence,
// until the test ends or Stop is called. args are more redis-server options
// (e.g. "--replicaof", "127.0.0.1", "6380").
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	Require(t)
	return start(t, "redis-server", func(port int) []string {
		return append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", t.TempDir()}, args...)
	})
}

// start runs command with the arguments args gives for a free port. A port
// found free may be taken before the process binds it: start tries others.
func start(t testing.TB, command string, args func(port int) []string) *Server {
	t.Helper()
	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), command: command, args: args(port)}
		if lastErr = s.run(); lastErr == nil {
			t.Cleanup(s.Stop)
			return s
		}
	}
	t.Fatalf("%s did not start: %v", command, lastErr)
	return nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// run starts the process and waits until it answers PING.
func (s *Server) run() error {
	var out strings.Builder
	cmd := exec.Command(s.command, s.args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	// A test binary killed before its cleanups leaves no Redis behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(s.exited) }()

	client := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: time.Second})
	defer client.Close()
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-s.exited:
			return fmt.Errorf("%s exited: %s", s.command, out.String())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := client.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("%s on %s does not answer PING: %v", s.command, s.Addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// URL is the server's database db as --ratelimit-redis takes it.
func (s *Server) URL(db int) string { return fmt.Sprintf("redis://%s/%d", s.Addr, db) }

// Client is a go-redis client of the server, closed when the test ends.
func (s *Server) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { c.Close() })
	return c
}

// Stop kills the process (SIGKILL, by its id: a crash, not a shutdown) and
// waits for it to exit. It may be called more than once.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Pause stops the process with SIGSTOP: it hangs, its connections open and
// its data kept, answering nothing until Resume.
func (s *Server) Pause() error { return s.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume lets a paused process go on (SIGCONT): it answers what it was sent
// meanwhile, to clients that may have stopped waiting.
func (s *Server) Resume() error { return s.cmd.Process.Signal(syscall.SIGCONT) }

// Restart starts the process again on the same port, empty.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	var err error
	for range 50 { // the port may stay busy for a moment
		if err = s.run(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("restart %s: %v", s.command, err)
}

// Sentinel is a high-availability Redis: a primary, its replica, and three
// sentinels watching them under the master name MasterName.
type Sentinel struct {
	Primary, Replica *Server
	Sentinels        []*Server
}

// MasterName is the name the sentinels know the primary by.
const MasterName = "petstore"

// StartSentinel runs a primary, a replica and three sentinels (quorum 2)
// that declare the primary down after 2 s without an answer (time enough for a test to see the gap).
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	Require(t)
	primary := Start(t)
	host, port, _ := net.SplitHostPort(primary.Addr)
	replica := Start(t, "--replicaof", host, port)
	hs := &Sentinel{Primary: primary, Replica: replica}
	for i := range 3 {
		dir := t.TempDir()
		hs.Sentinels = append(hs.Sentinels, start(t, "redis-sentinel", func(sport int) []string {
			// A sentinel rewrites its configuration file: each gets its own.
			conf := filepath.Join(dir, fmt.Sprintf("sentinel-%d.conf", i))
			data := strings.Join([]string{
				"port " + strconv.Itoa(sport),
				"bind 127.0.0.1",
				"dir " + dir,
				fmt.Sprintf("sentinel monitor %s %s %s 2", MasterName, host, port),
				"sentinel down-after-milliseconds " + MasterName + " 2000",
				"sentinel failover-timeout " + MasterName + " 10000",
				"sentinel parallel-syncs " + MasterName + " 1",
			}, "\n") + "\n"
			if err := os.WriteFile(conf, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			return []string{conf}
		}))
	}
	hs.waitUntil(t, func(c *redis.SentinelClient, ctx context.Context) bool {
		// Every sentinel knows the replica and the other two sentinels.
		replicas, err := c.Replicas(ctx, MasterName).Result()
		if err != nil || len(replicas) != 1 {
			return false
		}
		sentinels, err := c.Sentinels(ctx, MasterName).Result()
		return err == nil && len(sentinels) == 2
	})
	return hs
}

// URL is the configuration --ratelimit-redis takes for this setup: the
// sentinels' addresses and the master name, in go-redis's failover URL.
func (hs *Sentinel) URL(db int) string {
	u := fmt.Sprintf("redis://%s/%d?master_name=%s", hs.Sentinels[0].Addr, db, MasterName)
	for _, s := range hs.Sentinels[1:] {
		u += "&addr=" + s.Addr
	}
	return u
}

// MasterAddr is the primary's address as the first sentinel that answers
// knows it.
func (hs *Sentinel) MasterAddr(t testing.TB) string {
	t.Helper()
	var addr string
	hs.waitUntil(t, func(c *redis.SentinelClient, ctx context.Context) bool {
		a, err := c.GetMasterAddrByName(ctx, MasterName).Result()
		if err != nil || len(a) != 2 {
			return false
		}
		addr = net.JoinHostPort(a[0], a[1])
		return true
	})
	return addr
}

// WaitForFailover waits until every sentinel names a primary other than old,
// and that primary accepts writes; it returns the new primary's address.
func (hs *Sentinel) WaitForFailover(t testing.TB, old string) string {
	t.Helper()
	var addr string
	hs.waitUntil(t, func(c *redis.SentinelClient, ctx context.Context) bool {
		a, err := c.GetMasterAddrByName(ctx, MasterName).Result()
		if err != nil || len(a) != 2 || net.JoinHostPort(a[0], a[1]) == old {
			return false
		}
		addr = net.JoinHostPort(a[0], a[1])
		return true
	})
	primary := redis.NewClient(&redis.Options{Addr: addr})
	defer primary.Close()
	deadline := time.Now().Add(startTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		role, err := primary.Do(ctx, "ROLE").Slice()
		cancel()
		if err == nil && len(role) > 0 && role[0] == "master" {
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("new primary %s: role %v, %v", addr, role, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitUntil polls every running sentinel until ok holds for all of them.
func (hs *Sentinel) waitUntil(t testing.TB, ok func(*redis.SentinelClient, context.Context) bool) {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		all := true
		for _, s := range hs.Sentinels {
			c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			all = all && ok(c, ctx)
			cancel()
			c.Close()
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the sentinels did not agree in time")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
