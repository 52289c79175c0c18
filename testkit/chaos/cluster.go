package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"petstore/testkit/etcdtest"
	"petstore/testkit/realserver"
)

// clusterName is the nodes' --cluster-name, the prefix of their keys.
const clusterName = "chaos"

// cluster is three etcd members and three petstore nodes on loopback, each
// node reaching etcd and being reached by its peers through proxies of the
// harness's, with a file:// replica they share.
type cluster struct {
	etcd    *etcdtest.Cluster
	kv      *clientv3.Client // the harness's own, straight to the members
	nodes   []*node
	replica string // the replica's directory
	apiKey  string
}

// node is a petstore node and the proxies it goes through: one to each etcd
// member (its --cluster-etcd) and one its peers reach it by (its
// --advertise-url, where followers forward). Clients reach the node
// directly.
type node struct {
	*realserver.Node
	etcd []*proxy
	peer *proxy
}

// startCluster starts etcd and the nodes under dir, the first node leading
// with an API key of its own, the others following, caught up.
func startCluster(cfg Config, dir string) (*cluster, error) {
	c := &cluster{replica: filepath.Join(dir, "replica")}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var err error
	if c.etcd, err = etcdtest.Launch(filepath.Join(dir, "etcd"), 3, nil); err != nil {
		return nil, err
	}
	if c.kv, err = clientv3.New(clientv3.Config{Endpoints: c.etcd.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()}); err != nil {
		c.stop()
		return nil, err
	}
	if err := os.MkdirAll(c.replica, 0o700); err != nil {
		c.stop()
		return nil, err
	}
	secret, err := realserver.WriteSecret(dir)
	if err != nil {
		c.stop()
		return nil, err
	}
	for i := range 3 {
		if err := c.addNode(cfg, dir, i, secret); err != nil {
			c.stop()
			return nil, err
		}
	}
	if err := c.bootstrap(cfg); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

func (c *cluster) addNode(cfg Config, dir string, i int, secret string) error {
	addr, err := realserver.FreeAddr()
	if err != nil {
		return err
	}
	n := &node{}
	if n.peer, err = newProxy(addr); err != nil {
		return err
	}
	var endpoints []string
	for _, m := range c.etcd.Members {
		p, err := newProxy(strings.TrimPrefix(m.ClientURL, "http://"))
		if err != nil {
			return err
		}
		n.etcd = append(n.etcd, p)
		endpoints = append(endpoints, "http://"+p.Addr())
	}
	data := filepath.Join(dir, fmt.Sprintf("n%d", i))
	if err := os.MkdirAll(data, 0o700); err != nil {
		return err
	}
	args := []string{"--cluster-etcd", strings.Join(endpoints, ","), "--cluster-name", clusterName,
		"--node-name", fmt.Sprintf("n%d", i), "--advertise-url", "http://" + n.peer.Addr(),
		"--replica-url", "file://" + c.replica, "--cluster-secret-file", secret,
		"--cluster-ttl", cfg.TTL.String()}
	if cfg.Sync {
		args = append(args, "--cluster-sync")
	}
	n.Node = realserver.NewNode(cfg.Bin, fmt.Sprintf("n%d", i), data, addr, args...)
	c.nodes = append(c.nodes, n)
	return nil
}

// bootstrap starts the first node, which makes the database and leads,
// makes the clients' API key on it, then starts the others and waits until
// they campaign (caught up).
func (c *cluster) bootstrap(cfg Config) error {
	first := c.nodes[0]
	if err := first.Start(); err != nil {
		return fmt.Errorf("%w: %s", err, first.Output())
	}
	if !waitFor(30*time.Second, first.Leads) {
		return fmt.Errorf("the first node does not lead within 30 s: %s", first.Output())
	}
	key, _, err := realserver.CreateKey(cfg.Bin, first.Dir, "--plan", "pro", "--per-minute", "10000000", "--per-day", "100000000")
	if err != nil {
		return err
	}
	c.apiKey = key
	for _, n := range c.nodes[1:] {
		if err := n.Start(); err != nil {
			return fmt.Errorf("%w: %s", err, n.Output())
		}
	}
	for _, n := range c.nodes[1:] {
		if !waitFor(60*time.Second, func() bool { return strings.Contains(n.Output(), "Cluster: campaigning") }) {
			return fmt.Errorf("%s does not catch up within 60 s: %s", n.Name, n.Output())
		}
	}
	return nil
}

// leaderKey is the leader's election key in etcd (the first key of the
// election by creation), or "" when none is there.
func (c *cluster) leaderKey(ctx context.Context) (string, error) {
	resp, err := c.kv.Get(ctx, "/"+clusterName+"/leader/", clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(1))
	if err != nil || len(resp.Kvs) == 0 {
		return "", err
	}
	return string(resp.Kvs[0].Key), nil
}

// setReplicaWritable makes the replica's directories writable or not: their
// mode, and, for a harness run as root (whom modes do not stop), the
// immutable attribute (chattr), which stops root too.
func (c *cluster) setReplicaWritable(writable bool) error {
	mode, attr := os.FileMode(0o555), "+i"
	if writable {
		mode, attr = 0o700, "-i"
	}
	var dirs []string
	err := filepath.WalkDir(c.replica, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return err
	})
	if err != nil {
		return err
	}
	chmod := func() error {
		for _, d := range dirs {
			if err := os.Chmod(d, mode); err != nil {
				return err
			}
		}
		return nil
	}
	chattr := func() error {
		if os.Geteuid() != 0 {
			return nil
		}
		if out, err := exec.Command("chattr", append([]string{attr}, dirs...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("chattr %s: %w: %s", attr, err, out)
		}
		return nil
	}
	// An immutable directory's mode does not change: the attribute goes
	// last and comes off first.
	if writable {
		if err := chattr(); err != nil {
			return err
		}
		return chmod()
	}
	if err := chmod(); err != nil {
		return err
	}
	return chattr()
}

func (c *cluster) stop() {
	for _, n := range c.nodes {
		n.Kill()
		n.peer.Close()
		for _, p := range n.etcd {
			p.Close()
		}
	}
	if c.kv != nil {
		c.kv.Close()
	}
	_ = c.setReplicaWritable(true) // the caller removes it
	if c.etcd != nil {
		c.etcd.Stop()
	}
}

// waitFor reports whether cond holds within the time given.
func waitFor(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}
