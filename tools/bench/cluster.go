package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"petstore/testkit/realserver"
)

// The cluster targets run on cluster leaders beside the single server's
// targets, in the same rounds: one etcd member the benchmark starts, a file
// replica, and two clusters whose first leaders start on copies of the
// single server's data directory (its key and superuser), made before any
// server starts.
const (
	// leaderTarget is createPet on the leader of cluster "bench", which
	// one follower follows.
	leaderTarget = "createLeader"
	// syncTarget is createPet on the leader of cluster "benchsync", which
	// runs with --cluster-sync: each create waits for its shipment.
	syncTarget = "createSync"
	// leaderMixedTarget is the mixed load on cluster "bench"'s leader,
	// while the follower's lag is read every lagEvery.
	leaderMixedTarget = "mixedLeader"
)

// maxLeaderCPU is the goal for a cluster leader's server CPU per create
// over the single server's: shipping is Litestream reading the WAL and
// uploading its copies every 500 ms, in the background.
//
// --cluster-sync's figure (syncTarget's over createPet's) is reported with
// no goal: each group of creates pays for a shipment (Litestream's copy, its
// fsyncs and the upload), and the groups are as large as the creates that
// come while the shipment before runs, which the machine's load decides
// more than the code.
const maxLeaderCPU = 1.1

// lagEvery is how often the follower's lag is read during leaderMixedTarget.
const lagEvery = 100 * time.Millisecond

func isClusterTarget(name string) bool {
	return name == leaderTarget || name == syncTarget || name == leaderMixedTarget
}

// benchCluster is what the cluster targets run on.
type benchCluster struct {
	etcd            *exec.Cmd
	leader          *realserver.Process // cluster "bench"
	syncLeader      *realserver.Process // cluster "benchsync", --cluster-sync
	follower        *exec.Cmd           // follows "bench"; its metrics at followerMetrics
	followerMetrics string
	followerOut     *realserver.SyncBuffer

	mu  sync.Mutex
	lag []lagSample // read during leaderMixedTarget's runs
}

type lagSample struct {
	seconds      float64
	transactions float64
}

// startClusters starts etcd, the two leaders (with start, on copies of
// dataDir made now) and the follower, and returns once the follower
// follows. kill ends what it started.
func startClusters(bin, tmp, dataDir string, start func(dir string, args ...string) (*realserver.Process, error)) (c *benchCluster, err error) {
	if _, err := exec.LookPath("etcd"); err != nil {
		return nil, fmt.Errorf("etcd is not installed (Debian: apt-get install etcd-server), and the cluster targets need it: %w", err)
	}
	c = &benchCluster{}
	defer func() {
		if err != nil {
			c.kill()
		}
	}()
	leaderDir, syncDir := filepath.Join(tmp, "leader"), filepath.Join(tmp, "leader-sync")
	for _, d := range []string{leaderDir, syncDir} {
		if err := os.CopyFS(d, os.DirFS(dataDir)); err != nil {
			return nil, fmt.Errorf("copy the data directory for a leader: %w", err)
		}
	}
	etcdURL, err := c.startEtcd(filepath.Join(tmp, "etcd"))
	if err != nil {
		return nil, err
	}
	replica := "file://" + filepath.Join(tmp, "replica")
	secret := filepath.Join(tmp, "cluster-secret")
	if err := os.WriteFile(secret, []byte("the bench clusters' secret, 32 bytes and more"), 0o600); err != nil {
		return nil, err
	}
	node := func(cluster, name string, more ...string) []string {
		return append([]string{"--cluster-etcd", etcdURL, "--cluster-name", cluster, "--node-name", name, "--replica-url", replica,
			"--cluster-secret-file", secret}, more...)
	}
	if c.leader, err = start(leaderDir, node("bench", "leader")...); err != nil {
		return nil, err
	}
	if c.syncLeader, err = start(syncDir, node("benchsync", "leader", "--cluster-sync")...); err != nil {
		return nil, err
	}
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	if c.followerMetrics, err = freeLoopbackAddr(); err != nil {
		return nil, err
	}
	c.followerOut = &realserver.SyncBuffer{}
	c.follower = exec.Command(bin, append([]string{"serve", "--http", addr, "--dir", filepath.Join(tmp, "follower"),
		"--metrics-addr", c.followerMetrics}, node("bench", "follower")...)...)
	c.follower.Stdout, c.follower.Stderr = c.followerOut, c.followerOut
	c.follower.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.follower.Start(); err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		m, _ := c.followerFigures()
		if m[`petstore_cluster_role{role="follower"}`] == 1 && strings.Contains(c.followerOut.String(), "Cluster: campaigning") {
			return c, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the follower does not follow within a minute: %s", c.followerOut.String())
		}
	}
}

// startEtcd runs one etcd member on free loopback ports and returns its
// client URL once it is healthy.
func (c *benchCluster) startEtcd(dir string) (string, error) {
	clientAddr, err := freeLoopbackAddr()
	if err != nil {
		return "", err
	}
	peerAddr, err := freeLoopbackAddr()
	if err != nil {
		return "", err
	}
	clientURL, peerURL := "http://"+clientAddr, "http://"+peerAddr
	c.etcd = exec.Command("etcd", "--name", "bench", "--data-dir", dir,
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "bench="+peerURL, "--initial-cluster-state", "new", "--logger", "zap", "--log-level", "warn")
	c.etcd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.etcd.Start(); err != nil {
		return "", err
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(clientURL + "/health")
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), `"health":"true"`) {
			return clientURL, nil
		}
	}
	return "", fmt.Errorf("etcd on %s is not healthy within 30 s", clientURL)
}

// followerFigures reads the follower's metrics: the value of each sample,
// by its name and labels.
func (c *benchCluster) followerFigures() (map[string]float64, error) {
	client := http.Client{Timeout: time.Second}
	resp, err := client.Get("http://" + c.followerMetrics + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	figures := map[string]float64{}
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		line := lines.Text()
		if !strings.HasPrefix(line, "petstore_cluster_") {
			continue
		}
		name, value, ok := strings.Cut(line, " ")
		if v, err := strconv.ParseFloat(value, 64); ok && err == nil {
			figures[name] = v
		}
	}
	return figures, lines.Err()
}

// sampleLag reads the follower's lag every lagEvery until ctx ends.
func (c *benchCluster) sampleLag(ctx context.Context) {
	tick := time.NewTicker(lagEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		m, err := c.followerFigures()
		if err != nil {
			continue
		}
		c.mu.Lock()
		c.lag = append(c.lag, lagSample{m["petstore_cluster_lag_seconds"], m["petstore_cluster_lag_transactions"]})
		c.mu.Unlock()
	}
}

// printLag prints the follower's lag under leaderMixedTarget: its median,
// 99th percentile and largest sample.
func (c *benchCluster) printLag() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.lag) == 0 {
		return
	}
	pick := func(f func(lagSample) float64) (p50, p99, top float64) {
		vs := make([]float64, len(c.lag))
		for i, s := range c.lag {
			vs[i] = f(s)
		}
		slices.Sort(vs)
		return vs[len(vs)/2], vs[len(vs)*99/100], vs[len(vs)-1]
	}
	s50, s99, sMax := pick(func(s lagSample) float64 { return s.seconds })
	t50, t99, tMax := pick(func(s lagSample) float64 { return s.transactions })
	fmt.Printf("%-30s %.2f s / %.0f transactions (median), %.2f s / %.0f (p99), %.2f s / %.0f (max), %d samples\n",
		"follower lag under "+leaderMixedTarget, s50, t50, s99, t99, sMax, tMax, len(c.lag))
}

// stopFollower stops the follower as an operator would (SIGTERM: it
// leaves the cluster and exits 0). etcd stops with kill, once the leaders
// have stopped.
func (c *benchCluster) stopFollower() error {
	_ = c.follower.Process.Signal(syscall.SIGTERM)
	err := c.follower.Wait()
	c.follower = nil
	if err != nil {
		return fmt.Errorf("the follower did not stop cleanly: %v\n%s", err, c.followerOut.String())
	}
	return nil
}

// kill ends everything it started, at once.
func (c *benchCluster) kill() {
	for _, p := range []*realserver.Process{c.leader, c.syncLeader} {
		if p != nil {
			p.Kill()
		}
	}
	for _, cmd := range []*exec.Cmd{c.follower, c.etcd} {
		if cmd != nil && cmd.ProcessState == nil {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
		}
	}
}
