// Package etcdtest runs real etcd clusters for tests: Debian's etcd (3.4)
// members on free loopback ports, each with a data directory of the test's,
// each stopped by its process id when the test ends. It never touches an
// etcd it did not start.
package etcdtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds how long a cluster may take to become healthy: the
// test machines are shared and may be slow.
const startTimeout = 30 * time.Second

// Require skips the test under -short (the fast loop), and fails it in CI,
// and skips it elsewhere, when etcd is not installed.
func Require(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the etcd tests are skipped")
	}
	if _, err := exec.LookPath("etcd"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("etcd is not installed (CI installs Debian's etcd-server): %v", err)
		}
		t.Skipf("install Debian's etcd-server to run this test: %v", err)
	}
}

// Cluster is a set of etcd members started by a test.
type Cluster struct {
	Members []*Member
	// Certs are the certificates of a cluster started by StartTLS; nil
	// for a plain one.
	Certs *Certs
}

// Member is one etcd process.
type Member struct {
	Name      string
	ClientURL string // http://127.0.0.1:PORT, or https:// (StartTLS)
	args      []string
	cmd       *exec.Cmd
	exited    chan struct{}
	out       *strings.Builder
	client    *http.Client // reads /health
}

// Start runs a cluster of n members on free loopback ports, with the short
// heartbeat and election timeout of a fast test (100 ms, 1 s), until the
// test ends. It returns once the cluster has a leader.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	return startWith(t, n, nil)
}

func startWith(t testing.TB, n int, certs *Certs) *Cluster {
	t.Helper()
	Require(t)
	dir := t.TempDir()
	c, err := Launch(dir, n, certs)
	if err != nil {
		t.Fatalf("etcd did not start: %v", err)
	}
	t.Cleanup(c.Stop)
	return c
}

// Launch runs a cluster as Start does, for a program that is not a test
// (tools/chaos): the members' data under dir, certs nil for plain http://.
// It returns once the cluster has a leader; the caller ends it with Stop.
func Launch(dir string, n int, certs *Certs) (*Cluster, error) {
	var lastErr error
	// A port found free may be taken before etcd binds it: Launch tries
	// other ports, each try in a directory of its own.
	for try := range 3 {
		c, err := launch(filepath.Join(dir, fmt.Sprintf("try%d", try)), n, certs)
		if err == nil {
			return c, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func launch(dir string, n int, certs *Certs) (*Cluster, error) {
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Certs: certs}
	scheme, health := "http", http.DefaultClient
	if certs != nil {
		tlsConfig, err := certs.tlsConfig()
		if err != nil {
			return nil, err
		}
		scheme = "https"
		health = &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	}
	var initial []string
	for i := range n {
		initial = append(initial, fmt.Sprintf("e%d=http://127.0.0.1:%d", i, ports[2*i+1]))
	}
	for i := range n {
		client := fmt.Sprintf("%s://127.0.0.1:%d", scheme, ports[2*i])
		peer := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1])
		data := filepath.Join(dir, fmt.Sprintf("e%d", i))
		if err := os.MkdirAll(data, 0o700); err != nil {
			c.Stop()
			return nil, err
		}
		m := &Member{Name: fmt.Sprintf("e%d", i), ClientURL: client, client: health, args: []string{
			"--name", fmt.Sprintf("e%d", i), "--data-dir", data,
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "etcdtest",
			"--heartbeat-interval", "100", "--election-timeout", "1000",
			"--logger", "zap", "--log-level", "warn",
		}}
		if certs != nil {
			m.args = append(m.args, "--client-cert-auth", "--trusted-ca-file", certs.CA,
				"--cert-file", certs.ServerCert, "--key-file", certs.ServerKey)
		}
		if err := m.Start(); err != nil {
			c.Stop()
			return nil, err
		}
		c.Members = append(c.Members, m)
	}
	for _, m := range c.Members {
		if err := m.waitHealthy(startTimeout); err != nil {
			c.Stop()
			return nil, err
		}
	}
	return c, nil
}

// Endpoints are the members' client URLs, as --cluster-etcd takes them.
func (c *Cluster) Endpoints() []string {
	var urls []string
	for _, m := range c.Members {
		urls = append(urls, m.ClientURL)
	}
	return urls
}

// Stop kills every member and waits for each to exit.
func (c *Cluster) Stop() {
	for _, m := range c.Members {
		m.Stop()
	}
}

// Start starts a member that is not running, with its data and ports; it
// does not wait for the cluster's health, which needs a quorum.
func (m *Member) Start() error {
	m.out = &strings.Builder{}
	cmd := exec.Command("etcd", m.args...)
	cmd.Stdout, cmd.Stderr = m.out, m.out
	// A test binary killed before its cleanups leaves no etcd behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	m.cmd, m.exited = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(m.exited) }()
	return nil
}

// waitHealthy waits until the member answers /health with true: it has a
// leader and can serve.
func (m *Member) waitHealthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-m.exited:
			return fmt.Errorf("etcd %s exited: %s", m.Name, m.out.String())
		default:
		}
		if m.healthy() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcd %s on %s is not healthy after %s: %s", m.Name, m.ClientURL, timeout, m.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (m *Member) healthy() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, m.ClientURL+"/health", nil)
	resp, err := m.client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var body struct{ Health string }
	return json.NewDecoder(resp.Body).Decode(&body) == nil && body.Health == "true"
}

// Stop kills the member (SIGKILL) and waits for it to exit. Its data stays:
// Restart starts it again on the same ports.
func (m *Member) Stop() {
	if m.cmd == nil {
		return
	}
	select {
	case <-m.exited:
		return
	default:
	}
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.exited
}

// Running says whether the member's process runs.
func (m *Member) Running() bool {
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

// Restart starts a stopped member again with its data and ports; it does not
// wait for the cluster's health, which needs a quorum.
func (m *Member) Restart(t testing.TB) {
	t.Helper()
	if err := m.Start(); err != nil {
		t.Fatalf("etcd %s did not start again: %v", m.Name, err)
	}
}

func freePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, ln := range listeners {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// String names the member and its client URL, for test logs.
func (m *Member) String() string {
	return m.Name + " " + m.ClientURL + " pid " + strconv.Itoa(m.cmd.Process.Pid)
}
