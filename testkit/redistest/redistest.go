// Package redistest runs real Redis processes for tests: Debian's
// redis-server and redis-sentinel on free loopback ports, without
// persistence, each stopped by its process id when the test ends. It never
// touches a Redis it did not start.
package redistest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
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

// Require skips the test under -short (the fast loop), and fails it in CI,
// and skips it elsewhere, when redis-server or redis-sentinel is not
// installed.
func Require(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the Redis tests are skipped")
	}
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
	tls     *tls.Config // nil: plain TCP
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
	return startWith(t, command, nil, args)
}

// startWith is start for a server that speaks TLS with config tc (nil:
// plain TCP).
func startWith(t testing.TB, command string, tc *tls.Config, args func(port int) []string) *Server {
	t.Helper()
	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), command: command, args: args(port), tls: tc}
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

	client := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: time.Second, TLSConfig: s.tls})
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

// StartTLS runs redis-server speaking TLS only, on a free loopback port,
// with a certificate for 127.0.0.1 made for the test by a CA of its own;
// caFile is that CA's certificate (PEM). Debian's redis-server is built
// with TLS.
func StartTLS(t testing.TB) (s *Server, caFile string) {
	t.Helper()
	Require(t)
	dir := t.TempDir()
	caFile, certFile, keyFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	roots := writeTestCertificates(t, caFile, certFile, keyFile)
	tc := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	s = startWith(t, "redis-server", tc, func(port int) []string {
		return []string{"--port", "0", "--tls-port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-ca-cert-file", caFile,
			"--tls-auth-clients", "no", "--save", "", "--appendonly", "no", "--dir", dir}
	})
	return s, caFile
}

// writeTestCertificates writes a CA's certificate, and a certificate for
// 127.0.0.1 that it signed with its key, and returns the CA as a pool.
func writeTestCertificates(t testing.TB, caFile, certFile, keyFile string) *x509.CertPool {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "redistest CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for file, block := range map[string]*pem.Block{
		caFile: {Type: "CERTIFICATE", Bytes: caDER}, certFile: {Type: "CERTIFICATE", Bytes: leafDER},
		keyFile: {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	return roots
}

// URL is the server's database db as --ratelimit-redis takes it (rediss://
// for a server started with StartTLS, whose CA the URL does not name).
func (s *Server) URL(db int) string {
	scheme := "redis"
	if s.tls != nil {
		scheme = "rediss"
	}
	return fmt.Sprintf("%s://%s/%d", scheme, s.Addr, db)
}

// Client is a go-redis client of the server, closed when the test ends.
func (s *Server) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, TLSConfig: s.tls})
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

// Cluster is a Redis Cluster on loopback ports: masters, each with its
// replicas, that fail a master over after cluster-node-timeout (1 s).
type Cluster struct {
	Nodes []*Server
}

// StartCluster runs masters × (1 + replicas) redis-server processes in
// cluster mode and joins them with redis-cli --cluster create; it returns
// once every node reports the cluster ok and every master has its replicas.
func StartCluster(t testing.TB, masters, replicas int) *Cluster {
	t.Helper()
	Require(t)
	if _, err := exec.LookPath("redis-cli"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-cli is not installed (CI installs Debian's redis-tools): %v", err)
		}
		t.Skipf("install Debian's redis-tools to run this test: %v", err)
	}
	c := &Cluster{}
	args := []string{"--cluster", "create"}
	for range masters * (1 + replicas) {
		n := Start(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "1000", "--cluster-replica-validity-factor", "0")
		c.Nodes = append(c.Nodes, n)
		args = append(args, n.Addr)
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.waitUntil(t, nil, func(shards []redis.ClusterShard) bool {
		serving := 0
		for _, s := range shards {
			if len(s.Slots) == 0 {
				continue
			}
			serving++
			online := 0
			for _, n := range s.Nodes {
				if n.Health == "online" {
					online++
				}
			}
			if online != 1+replicas {
				return false
			}
		}
		return serving == masters
	})
	return c
}

// URL is --ratelimit-redis for the cluster: every node as a seed.
func (c *Cluster) URL() string {
	u := "redis+cluster://" + c.Nodes[0].Addr
	for i, n := range c.Nodes[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=" + n.Addr
	}
	return u
}

// MasterFor is the node that serves the hash slot of key now.
func (c *Cluster) MasterFor(t testing.TB, key string) *Server {
	t.Helper()
	client := c.Nodes[0].Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	slot, err := client.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	shards, err := client.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range shards {
		for _, r := range s.Slots {
			if r.Start <= slot && slot <= r.End {
				for _, n := range c.Nodes {
					if n.Addr == masterOf(s) {
						return n
					}
				}
			}
		}
	}
	t.Fatalf("no node serves slot %d of %q", slot, key)
	return nil
}

// masterOf is the address of shard s's master; "" when it has none.
func masterOf(s redis.ClusterShard) string {
	for _, n := range s.Nodes {
		if n.Role == "master" {
			return net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))
		}
	}
	return ""
}

// WaitForFailover waits until a replica serves every slot of the stopped
// master dead, and every other node reports the cluster ok.
func (c *Cluster) WaitForFailover(t testing.TB, dead *Server) {
	t.Helper()
	c.waitUntil(t, dead, func(shards []redis.ClusterShard) bool {
		for _, s := range shards {
			if len(s.Slots) > 0 && masterOf(s) == dead.Addr {
				return false
			}
		}
		return true
	})
}

// waitUntil polls every node but skip until each reports cluster_state:ok
// and ok holds for its CLUSTER SHARDS.
func (c *Cluster) waitUntil(t testing.TB, skip *Server, ok func([]redis.ClusterShard) bool) {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		all := true
		for _, n := range c.Nodes {
			if n == skip {
				continue
			}
			client := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			info, err := client.ClusterInfo(ctx).Result()
			var shards []redis.ClusterShard
			if err == nil {
				shards, err = client.ClusterShards(ctx).Result()
			}
			cancel()
			client.Close()
			all = all && err == nil && strings.Contains(info, "cluster_state:ok") && ok(shards)
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the Redis Cluster did not settle in time")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
