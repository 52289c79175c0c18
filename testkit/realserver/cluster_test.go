package realserver_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"petstore/testkit/etcdtest"
	"petstore/testkit/realserver"
)

// clusterNode is one `petstore serve --cluster-etcd` process of a test, on
// a port and a data directory that stay its own across restarts.
type clusterNode struct {
	name, dir, addr string
	args            []string
	cmd             *exec.Cmd
	exited          chan struct{}
	output          *realserver.SyncBuffer
}

// testCluster is three etcd members and three petstore nodes with a file://
// replica, all on loopback.
type testCluster struct {
	etcd  *etcdtest.Cluster
	nodes []*clusterNode
}

// startCluster starts etcd and makes n nodes with more serve flags args;
// the nodes start with startLeaderAndFollowers.
func startCluster(t *testing.T, n int, args ...string) *testCluster {
	t.Helper()
	etcd := etcdtest.Start(t, 3)
	replica := "file://" + t.TempDir()
	secret := filepath.Join(t.TempDir(), "cluster-secret")
	if err := os.WriteFile(secret, []byte("the test cluster's secret, 32 bytes and more\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &testCluster{etcd: etcd}
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		node := &clusterNode{name: fmt.Sprintf("n%d", i), dir: t.TempDir(), addr: addr}
		node.args = []string{"serve", "--http", addr, "--dir", node.dir,
			"--cluster-etcd", strings.Join(etcd.Endpoints(), ","), "--node-name", node.name, "--replica-url", replica,
			"--cluster-secret-file", secret}
		node.args = append(node.args, args...)
		c.nodes = append(c.nodes, node)
		t.Cleanup(node.kill)
	}
	return c
}

func (n *clusterNode) start(t *testing.T) {
	t.Helper()
	n.output = &realserver.SyncBuffer{}
	n.cmd = exec.Command(bin, n.args...)
	n.cmd.Stdout, n.cmd.Stderr = n.output, n.output
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n.exited = make(chan struct{})
	go func() { _ = n.cmd.Wait(); close(n.exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if status, _ := n.get("/healthz"); status == http.StatusOK {
			return
		}
		select {
		case <-n.exited:
			t.Fatalf("%s exited: %s", n.name, n.output.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not answer /healthz: %s", n.name, n.output.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (n *clusterNode) kill() {
	if n.cmd == nil {
		return
	}
	select {
	case <-n.exited:
	default:
		_ = n.cmd.Process.Signal(syscall.SIGKILL)
		<-n.exited
	}
}

func (n *clusterNode) url() string { return "http://" + n.addr }

func (n *clusterNode) get(path string) (int, string) {
	client := http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(n.url() + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// leads says whether the node answers /readyz 200 as the leader.
func (n *clusterNode) leads() bool {
	status, body := n.get("/readyz")
	return status == http.StatusOK && strings.Contains(body, `"role":"leader"`)
}

// follows says whether the node's /readyz names it a follower.
func (n *clusterNode) follows() bool {
	status, body := n.get("/readyz")
	return status == http.StatusServiceUnavailable && strings.Contains(body, "This node is a follower")
}

func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !waitFor(within, cond) {
		t.Fatalf("not within %s: %s", within, what)
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

// startLeaderAndFollowers starts the first node, which creates the
// database and leads, makes a key on it, then starts the others and waits
// until they follow, caught up.
func startLeaderAndFollowers(t *testing.T, c *testCluster) (key string) {
	t.Helper()
	c.nodes[0].start(t)
	waitUntil(t, 20*time.Second, "the first node leads", c.nodes[0].leads)
	key, _, err := realserver.CreateKey(bin, c.nodes[0].dir, "--plan", "pro", "--per-minute", "1000000", "--per-day", "10000000")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range c.nodes[1:] {
		n.start(t)
	}
	// A follower's first restore waits for the leader's first shipment:
	// seconds on a loaded machine. Its log says where it stopped.
	for _, n := range c.nodes[1:] {
		if !waitFor(30*time.Second, n.follows) {
			t.Fatalf("not within 30s: %s follows; its output:\n%s", n.name, n.output.String())
		}
		if !waitFor(30*time.Second, func() bool { return strings.Contains(n.output.String(), "Cluster: campaigning") }) {
			t.Fatalf("not within 30s: %s has caught up and campaigns; its output:\n%s", n.name, n.output.String())
		}
	}
	return key
}

// ack is a create the service acknowledged.
type ack struct {
	id       int64
	body     []byte
	sent, at time.Time // the request's, the 201's
}

// writers sends creates with Idempotency-Keys to every node in turn, each
// retried with its key until a 201, and records the acknowledged ones and
// the 201s' times.
type writers struct {
	key   string
	nodes []*clusterNode

	mu       sync.Mutex
	acks     []ack
	refusals []time.Time // sent, and not acknowledged
	bare     []string    // answers other than 201 without the API's Error body, Request-Id or Retry-After
	stop     chan struct{}
	done     sync.WaitGroup
}

func startWriters(key string, nodes []*clusterNode, n int) *writers {
	w := &writers{key: key, nodes: nodes, stop: make(chan struct{})}
	for i := range n {
		w.done.Add(1)
		go w.write(i)
	}
	return w
}

func (w *writers) write(writer int) {
	defer w.done.Done()
	client := &http.Client{Timeout: 5 * time.Second}
	for seq := 0; ; seq++ {
		body := fmt.Appendf(nil, `{"name":"w%d-%d","categoryId":1}`, writer, seq)
		idem := fmt.Sprintf("w%d-%d", writer, seq)
		for try := 0; ; try++ {
			select {
			case <-w.stop:
				return
			default:
			}
			node := w.nodes[(writer+seq+try)%len(w.nodes)]
			req, _ := http.NewRequest(http.MethodPost, node.url()+"/v1/pets", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+w.key)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", idem)
			sent := time.Now()
			resp, err := client.Do(req)
			if err == nil {
				// A body cut short (the leader lost under a forwarded
				// answer) is no answer: the create is sent again.
				data, rerr := io.ReadAll(resp.Body)
				resp.Body.Close()
				if rerr == nil && resp.StatusCode == http.StatusCreated {
					var pet struct{ ID int64 }
					_ = json.Unmarshal(data, &pet)
					w.mu.Lock()
					w.acks = append(w.acks, ack{id: pet.ID, body: data, sent: sent, at: time.Now()})
					w.mu.Unlock()
					break
				}
				if rerr == nil {
					if why := bareAnswer(resp, data); why != "" {
						w.mu.Lock()
						w.bare = append(w.bare, fmt.Sprintf("%d %s: %s", resp.StatusCode, why, data))
						w.mu.Unlock()
					}
				}
			}
			w.mu.Lock()
			w.refusals = append(w.refusals, sent)
			w.mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// bareAnswer says what a refusal lacks of the API's answers (the Error
// body with a code, Request-Id, and on a 503 Retry-After), or "".
func bareAnswer(resp *http.Response, body []byte) string {
	var e struct {
		Code   string
		Status int
	}
	switch {
	case json.Unmarshal(body, &e) != nil || e.Code == "" || e.Status != resp.StatusCode:
		return "no Error body"
	case resp.Header.Get("Request-Id") == "":
		return "no Request-Id"
	case resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "":
		return "no Retry-After"
	}
	return ""
}

// checkAnswers fails t for each refusal that was not the API's answer.
func (w *writers) checkAnswers(t *testing.T, through string) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, b := range w.bare {
		if i == 5 {
			t.Errorf("… and %d more", len(w.bare)-i)
			break
		}
		t.Errorf("through %s, a refusal that is not the API's answer: %s", through, b)
	}
}

// longestGap is the longest time without a 201 from t on.
func (w *writers) longestGap(t time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var times []time.Time
	for _, a := range w.acks {
		if a.at.After(t) {
			times = append(times, a.at)
		}
	}
	slices.SortFunc(times, time.Time.Compare)
	gap, last := time.Duration(0), t
	for _, at := range times {
		gap, last = max(gap, at.Sub(last)), at
	}
	return gap
}

func (w *writers) halt() {
	close(w.stop)
	w.done.Wait()
}

// firstAckAfter is the time of the first 201 to a request sent after t.
func (w *writers) firstAckAfter(t time.Time) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var first time.Time
	for _, a := range w.acks {
		if a.sent.After(t) && (first.IsZero() || a.at.Before(first)) {
			first = a.at
		}
	}
	return first, !first.IsZero()
}

// checkAcknowledged checks on node that every create acknowledged before
// until is stored byte for byte, and that no pet is stored twice.
func checkAcknowledged(t *testing.T, node *clusterNode, key string, acks []ack, until time.Time) (present, lost int) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	get := func(path string) (int, []byte, http.Header) {
		req, _ := http.NewRequest(http.MethodGet, node.url()+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, data, resp.Header
	}
	for _, a := range acks {
		status, data, _ := get(fmt.Sprintf("/v1/pets/%d", a.id))
		switch {
		case status == http.StatusOK && bytes.Equal(data, a.body):
			present++
		case a.at.Before(until):
			t.Errorf("pet %d acknowledged at %s (%s before the kill or stop) is %d %s, want %s",
				a.id, a.at.Format(time.StampMilli), until.Sub(a.at), status, data, a.body)
		default:
			lost++
		}
	}
	names := map[string]int{}
	path := "/v1/pets?limit=100"
	for path != "" {
		status, data, header := get(path)
		if status != http.StatusOK {
			t.Fatalf("listPets: %d %s", status, data)
		}
		var page []struct{ Name string }
		if err := json.Unmarshal(data, &page); err != nil {
			t.Fatal(err)
		}
		for _, p := range page {
			names[p.Name]++
		}
		path = ""
		if link := header.Get("Link"); link != "" {
			next := strings.TrimSuffix(strings.TrimPrefix(strings.Split(link, ";")[0], "<"), ">")
			path = next[strings.Index(next, "/v1/"):]
		}
	}
	for name, n := range names {
		if n > 1 {
			t.Errorf("pet %q is stored %d times", name, n)
		}
	}
	return present, lost
}

func TestClusterLeaderKilledUnderLoad(t *testing.T) {
	c := startCluster(t, 3)
	key := startLeaderAndFollowers(t, c)
	leader := c.nodes[0]
	w, killed, next := killLeaderUnderLoad(t, c, key)
	present, lost := checkAcknowledged(t, next, key, w.acks, killed.Add(-time.Second))
	t.Logf("%d creates acknowledged: %d present, %d lost (acknowledged within 1 s before the kill)", len(w.acks), present, lost)

	// The old leader, restarted, rejoins as a follower, its data set aside.
	leader.start(t)
	waitUntil(t, 20*time.Second, "the old leader follows", leader.follows)
	waitUntil(t, 10*time.Second, "the old leader's data is set aside", func() bool {
		return strings.Contains(leader.output.String(), "Set aside a database")
	})
	entries, _ := os.ReadDir(filepath.Join(leader.dir, "set-aside"))
	if len(entries) == 0 {
		t.Error("no file in the old leader's set-aside directory")
	}
	// The CLI refuses a follower's copy.
	if _, stderr, err := realserver.Keys(bin, leader.dir, "list"); err == nil || !strings.Contains(stderr, "follower's copy") {
		t.Errorf("keys list on a follower's --dir: error %v, stderr %q", err, stderr)
	}
	// The set-aside databases are listed and removed beside the running
	// follower: a prune needs its age.
	stdout, stderr, status := petstore(t, leader.dir, "set-aside", "list")
	if status != 0 || strings.Count(stdout, filepath.Join(leader.dir, "set-aside", "data-")) != 1 {
		t.Fatalf("set-aside list: %d %q %q, want the one database set aside", status, stdout, stderr)
	}
	if _, stderr, status := petstore(t, leader.dir, "set-aside", "prune"); status != 1 || !strings.Contains(stderr, "--older-than") {
		t.Errorf("set-aside prune without --older-than: %d %q, want exit 1 naming the flag", status, stderr)
	}
	if stdout, _, status := petstore(t, leader.dir, "set-aside", "prune", "--older-than", "1h"); status != 0 || stdout != "Nothing to remove.\n" {
		t.Errorf("set-aside prune --older-than 1h: %d %q, want nothing removed", status, stdout)
	}
	if stdout, _, status := petstore(t, leader.dir, "set-aside", "prune", "--older-than", "0"); status != 0 || !strings.HasPrefix(stdout, "Removed "+filepath.Join(leader.dir, "set-aside", "data-")) {
		t.Errorf("set-aside prune --older-than 0: %d %q, want the database removed", status, stdout)
	}
	if entries, _ := os.ReadDir(filepath.Join(leader.dir, "set-aside")); len(entries) != 0 {
		t.Errorf("after the prune, set-aside/ holds %d files", len(entries))
	}
	if !leader.follows() {
		t.Error("the follower stopped following during the prune")
	}
}

// killLeaderUnderLoad runs eight writers through every node, SIGKILLs the
// leader (the first node) after 3 s, and stops the writers 2 s after the
// first 201 to a request sent after the kill, which must come within 10 s.
// It returns the writers, the kill's time and the new leader.
func killLeaderUnderLoad(t *testing.T, c *testCluster, key string) (w *writers, killed time.Time, next *clusterNode) {
	t.Helper()
	w = startWriters(key, c.nodes, 8)
	time.Sleep(3 * time.Second)
	killed = time.Now()
	c.nodes[0].kill()
	first, ok := time.Time{}, false
	for time.Since(killed) < 15*time.Second {
		if first, ok = w.firstAckAfter(killed); ok {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !ok {
		w.halt()
		for _, n := range c.nodes[1:] {
			t.Logf("%s's output:\n%s", n.name, n.output.String())
		}
		t.Fatal("no create acknowledged within 15 s of the leader's SIGKILL")
	}
	failover := first.Sub(killed)
	time.Sleep(2 * time.Second)
	w.halt()
	t.Logf("SIGKILL of the leader to the new leader's first 201: %s (the longest time without a 201: %s)", failover, w.longestGap(killed))
	if failover > 10*time.Second {
		t.Errorf("failover took %s, more than 10 s", failover)
	}
	for _, n := range c.nodes[1:] {
		if n.leads() {
			next = n
		}
	}
	if next == nil {
		t.Fatal("no node leads after the failover")
	}
	return w, killed, next
}

// TestClusterSyncLosesNoAcknowledgedCreate: under --cluster-sync a create is
// acknowledged only once shipped, so a SIGKILL of the leader loses none,
// those of its last second included.
func TestClusterSyncLosesNoAcknowledgedCreate(t *testing.T) {
	c := startCluster(t, 3, "--cluster-sync")
	key := startLeaderAndFollowers(t, c)
	w, killed, next := killLeaderUnderLoad(t, c, key)
	lastSecond := 0
	for _, a := range w.acks {
		if a.at.Before(killed) && a.at.After(killed.Add(-time.Second)) {
			lastSecond++
		}
	}
	if lastSecond == 0 {
		t.Fatal("no create acknowledged in the last second before the kill: the drill proves nothing")
	}
	// Every 201, whenever it came, is on the new leader byte for byte.
	present, lost := checkAcknowledged(t, next, key, w.acks, time.Now())
	t.Logf("%d creates acknowledged, %d in the last second before the kill: %d present, %d lost", len(w.acks), lastSecond, present, lost)
}

// TestClusterBehindCaddy runs deploy/cluster/Caddyfile as written in front
// of the three nodes: its active health checks on /readyz send traffic to
// the leader alone, and to the next one after a failover; meanwhile every
// refusal is the API's 503 not_leader with Retry-After and Request-Id.
func TestClusterBehindCaddy(t *testing.T) {
	if _, err := exec.LookPath("caddy"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("caddy is not installed (CI installs Debian's caddy): %v", err)
		}
		t.Skipf("install Debian's caddy to run this test: %v", err)
	}
	c := startCluster(t, 3)
	key := startLeaderAndFollowers(t, c)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String()
	ln.Close()
	var upstreams []string
	for _, n := range c.nodes {
		upstreams = append(upstreams, n.addr)
	}
	startCaddyWith(t, "cluster/Caddyfile", listen, upstreams)
	caddy := &clusterNode{name: "caddy", addr: listen}

	w := startWriters(key, []*clusterNode{caddy}, 8)
	time.Sleep(2 * time.Second)
	killed := time.Now()
	c.nodes[0].kill()
	var first time.Time
	waitUntil(t, 30*time.Second, "a create acknowledged through Caddy after the kill", func() bool {
		var ok bool
		first, ok = w.firstAckAfter(killed)
		return ok
	})
	time.Sleep(time.Second)
	w.halt()
	t.Logf("through Caddy (health checks every second): SIGKILL of the leader to the first 201: %s (%d requests refused or failed)",
		first.Sub(killed), len(w.refusals))
	w.checkAnswers(t, "Caddy")
	var next *clusterNode
	for _, n := range c.nodes[1:] {
		if n.leads() {
			next = n
		}
	}
	if next == nil {
		t.Fatal("no node leads")
	}
	present, lost := checkAcknowledged(t, next, key, w.acks, killed.Add(-time.Second))
	t.Logf("%d creates acknowledged through Caddy: %d present, %d lost (within 1 s before the kill)", len(w.acks), present, lost)
}

// TestClusterBehindNginx runs deploy/cluster/nginx.conf as written in front
// of the three nodes: nginx has no active health checks, so it sends
// requests to every node, the followers forward them to the leader, and a
// dead node is skipped (proxy_next_upstream). The client's address and
// nginx's request id reach the leader, through a follower too; a client
// that reaches a follower directly cannot name its own address.
func TestClusterBehindNginx(t *testing.T) {
	requireTool(t, "nginx")
	c := startCluster(t, 3, "--access-log", "--proxy-addresses", "127.0.0.1", "--trusted-proxy-headers", "X-Forwarded-For")
	key := startLeaderAndFollowers(t, c)
	listen := freeAddr(t)
	var upstreams []string
	for _, n := range c.nodes {
		upstreams = append(upstreams, n.addr)
	}
	startNginxWith(t, "cluster/nginx.conf", listen, upstreams)
	nginx := &clusterNode{name: "nginx", addr: listen}

	// A client at 127.0.0.2 that names another address: nginx replaces it,
	// and a follower reached directly replaces it too.
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext,
	}}
	const path = "/v1/pets/123456789012345"
	ids := map[string]bool{}
	for i, base := range []string{nginx.url(), nginx.url(), nginx.url(), nginx.url(), nginx.url(), nginx.url(), c.nodes[1].url()} {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("X-Forwarded-For", "192.0.2.9")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		id := resp.Header.Get("Request-Id")
		if resp.StatusCode != http.StatusNotFound || i < 6 && !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) {
			t.Errorf("GET %s%s: %d, Request-Id %q; want 404 with nginx's id", base, path, resp.StatusCode, id)
		}
		ids[id] = true
	}
	waitUntil(t, 5*time.Second, "the leader logs the seven requests", func() bool {
		return strings.Count(c.nodes[0].output.String(), "path="+path) == 7
	})
	for line := range strings.SplitSeq(c.nodes[0].output.String(), "\n") {
		if !strings.Contains(line, "path="+path) {
			continue
		}
		id, _, _ := strings.Cut(line[strings.Index(line, "requestId=")+len("requestId="):], " ")
		if !strings.Contains(line, "client=127.0.0.2 ") || !ids[id] {
			t.Errorf("the leader's line of a request from 127.0.0.2: %s (request ids %v)", line, ids)
		}
	}

	w := startWriters(key, []*clusterNode{nginx}, 8)
	time.Sleep(2 * time.Second)
	killed := time.Now()
	c.nodes[0].kill()
	var first time.Time
	waitUntil(t, 30*time.Second, "a create acknowledged through nginx after the kill", func() bool {
		var ok bool
		first, ok = w.firstAckAfter(killed)
		return ok
	})
	time.Sleep(time.Second)
	w.halt()
	t.Logf("through nginx: SIGKILL of the leader to the first 201: %s (the longest time without a 201: %s; %d requests refused or failed)",
		first.Sub(killed), w.longestGap(killed), len(w.refusals))
	w.checkAnswers(t, "nginx")
	if d := first.Sub(killed); d > 10*time.Second {
		t.Errorf("through nginx, the first 201 came %s after the kill, more than 10 s", d)
	}
	var next *clusterNode
	for _, n := range c.nodes[1:] {
		if n.leads() {
			next = n
		}
	}
	if next == nil {
		t.Fatal("no node leads")
	}
	present, lost := checkAcknowledged(t, next, key, w.acks, killed.Add(-time.Second))
	t.Logf("%d creates acknowledged through nginx: %d present, %d lost (within 1 s before the kill)", len(w.acks), present, lost)
}

func TestClusterHandoverOnSIGTERM(t *testing.T) {
	c := startCluster(t, 3)
	key := startLeaderAndFollowers(t, c)
	leader := c.nodes[0]

	w := startWriters(key, c.nodes[1:], 8)
	time.Sleep(3 * time.Second)
	stopped := time.Now()
	if err := leader.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second)
	w.halt()
	// The refused window: from the first refused request sent after the
	// SIGTERM to the last (every writer retries at once, so a refusal
	// follows another while no node takes writes).
	var refusedFrom, refusedUntil time.Time
	refused := 0
	w.mu.Lock()
	for _, r := range w.refusals {
		if r.After(stopped) {
			refused++
			if refusedFrom.IsZero() || r.Before(refusedFrom) {
				refusedFrom = r
			}
			if r.After(refusedUntil) {
				refusedUntil = r
			}
		}
	}
	w.mu.Unlock()
	if _, ok := w.firstAckAfter(refusedUntil); !ok {
		t.Fatal("no create acknowledged after the handover")
	}
	window := refusedUntil.Sub(refusedFrom)
	t.Logf("SIGTERM: %d writes refused, over %s; the longest time without a 201: %s", refused, window, w.longestGap(stopped))
	if window > 2*time.Second {
		t.Errorf("writes were refused for %s, more than 2 s", window)
	}
	select {
	case <-leader.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the old leader did not exit after SIGTERM")
	}
	if out := leader.output.String(); !strings.Contains(out, "resigned the leadership") || strings.Contains(out, "restarting as a follower") {
		t.Errorf("the old leader did not resign and exit:\n%s", out)
	}
	var next *clusterNode
	waitUntil(t, 5*time.Second, "a new leader", func() bool {
		for _, n := range c.nodes[1:] {
			if n.leads() {
				next = n
				return true
			}
		}
		return false
	})
	present, lost := checkAcknowledged(t, next, key, w.acks, time.Now())
	t.Logf("%d creates acknowledged: %d present, %d lost", len(w.acks), present, lost)
	if lost != 0 {
		t.Errorf("%d acknowledged creates lost in a handover", lost)
	}
	// Restarted, the old leader follows: it shipped everything, so its
	// term's replica holds its database whole, and nothing is set aside.
	leader.start(t)
	waitUntil(t, 20*time.Second, "the old leader follows", leader.follows)
	waitUntil(t, 20*time.Second, "the old leader says what became of its database", func() bool {
		out := leader.output.String()
		return strings.Contains(out, "nothing set aside") || strings.Contains(out, "Set aside a database")
	})
	if out := leader.output.String(); !strings.Contains(out, "nothing set aside") || strings.Contains(out, "Set aside a database") {
		t.Errorf("the old leader, restarted after a handover, did not say it set nothing aside:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(leader.dir, "set-aside")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the old leader's set-aside directory after a handover: %v, want none", err)
	}
}

func TestClusterRollingRestartLosesNothing(t *testing.T) {
	c := startCluster(t, 3)
	key := startLeaderAndFollowers(t, c)
	w := startWriters(key, c.nodes, 8)
	time.Sleep(2 * time.Second)
	// Each node in turn, the followers first: SIGTERM, wait for its exit
	// (a follower leaves at once, a leader hands over), start it again,
	// wait until it follows and campaigns (caught up) before the next.
	began := time.Now()
	for _, n := range slices.Backward(c.nodes) {
		leading := n.leads()
		if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-n.exited:
		case <-time.After(30 * time.Second):
			_ = n.cmd.Process.Signal(syscall.SIGQUIT)
			time.Sleep(time.Second)
			t.Fatalf("%s did not exit after SIGTERM:\n%s", n.name, n.output.String())
		}
		if !leading && !strings.Contains(n.output.String(), "Cluster: stopped as a follower") {
			t.Errorf("%s did not stop as a follower:\n%s", n.name, n.output.String())
		}
		if code := n.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("%s (leader: %t) exited with status %d after SIGTERM:\n%s", n.name, leading, code, n.output.String())
		}
		n.start(t)
		waitUntil(t, 30*time.Second, n.name+" follows again", n.follows)
		waitUntil(t, 30*time.Second, n.name+" has caught up", func() bool {
			return strings.Count(n.output.String(), "Cluster: campaigning") >= 1
		})
		t.Logf("restarted %s (leader: %t)", n.name, leading)
	}
	time.Sleep(2 * time.Second)
	w.halt()
	var leader *clusterNode
	waitUntil(t, 10*time.Second, "a leader", func() bool {
		for _, n := range c.nodes {
			if n.leads() {
				leader = n
				return true
			}
		}
		return false
	})
	present, lost := checkAcknowledged(t, leader, key, w.acks, time.Now())
	t.Logf("%d creates acknowledged: %d present, %d lost; the longest time without a 201: %s", len(w.acks), present, lost, w.longestGap(began))
	if lost != 0 {
		t.Errorf("a rolling restart lost %d acknowledged creates", lost)
	}
}

func TestClusterQuorumLostStopsWrites(t *testing.T) {
	const ttl = 5 * time.Second // the default
	c := startCluster(t, 3)
	key := startLeaderAndFollowers(t, c)
	w := startWriters(key, c.nodes, 8)
	time.Sleep(2 * time.Second)
	lost := time.Now()
	c.etcd.Members[1].Stop()
	c.etcd.Members[2].Stop()
	// No node acknowledges a create from the TTL plus 2 s on.
	quiet := lost.Add(ttl + 2*time.Second)
	time.Sleep(time.Until(quiet) + 3*time.Second)
	w.mu.Lock()
	for _, a := range w.acks {
		if a.at.After(quiet) {
			t.Errorf("a create acknowledged %s after etcd lost its quorum (TTL %s)", a.at.Sub(lost), ttl)
			break
		}
	}
	stopped := 0
	for _, a := range w.acks {
		if a.at.After(lost) {
			stopped = max(stopped, int(a.at.Sub(lost)/time.Millisecond))
		}
	}
	w.mu.Unlock()
	t.Logf("the last create acknowledged %d ms after etcd lost its quorum", stopped)

	back := time.Now()
	c.etcd.Members[1].Restart(t)
	c.etcd.Members[2].Restart(t)
	var leader *clusterNode
	waitUntil(t, 60*time.Second, "a leader once the quorum is back", func() bool {
		for _, n := range c.nodes {
			if n.leads() {
				leader = n
				return true
			}
		}
		return false
	})
	first, ok := time.Time{}, false
	waitUntil(t, 20*time.Second, "a create acknowledged once the quorum is back", func() bool {
		first, ok = w.firstAckAfter(back)
		return ok
	})
	w.halt()
	t.Logf("quorum back to a leader's first 201: %s", first.Sub(back))
	present, missing := checkAcknowledged(t, leader, key, w.acks, lost.Add(-time.Second))
	t.Logf("%d creates acknowledged: %d present, %d missing (acknowledged within 1 s before the quorum was lost, or after)", len(w.acks), present, missing)
}

func TestClusterPausedLeaderIsFenced(t *testing.T) {
	const ttl = 2 * time.Second
	c := startCluster(t, 3, "--cluster-ttl", ttl.String())
	key := startLeaderAndFollowers(t, c)
	old := c.nodes[0]
	time.Sleep(2 * time.Second) // the key is shipped (within 1 s)
	if err := old.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	var next *clusterNode
	waitUntil(t, 3*ttl+10*time.Second, "a follower leads", func() bool {
		for _, n := range c.nodes[1:] {
			if n.leads() {
				next = n
				return true
			}
		}
		return false
	})
	// A pet the new leader acknowledges while the old one is paused: the
	// old one's copy does not hold it.
	status, created := send(t, http.MethodPost, next.url()+"/v1/pets", key, `{"name":"after-the-pause","categoryId":1}`)
	if status != http.StatusCreated {
		t.Fatalf("a create on the new leader: %d %s", status, created)
	}
	var newPet struct{ ID int64 }
	_ = json.Unmarshal(created, &newPet)
	time.Sleep(time.Until(paused.Add(3 * ttl)))
	// Creates and reads sent to the paused node wait in its listen queue,
	// to be read the moment it resumes, before it hears from etcd.
	type answer struct {
		read   bool
		status int
		body   []byte
	}
	const creates, reads = 16, 8
	answers := make(chan answer, creates+reads)
	for i := range creates + reads {
		go func() {
			method, path, body := http.MethodPost, "/v1/pets", fmt.Sprintf(`{"name":"paused-%d","categoryId":1}`, i)
			if i >= creates {
				method, path, body = http.MethodGet, fmt.Sprintf("/v1/pets/%d", newPet.ID), ""
			}
			status, data := send(t, method, old.url()+path, key, body)
			answers <- answer{method == http.MethodGet, status, data}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	if err := old.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	var acks []ack
	outcomes := map[string]int{}
	for range creates + reads {
		a := <-answers
		switch {
		case a.read:
			outcomes[fmt.Sprintf("getPet %d", a.status)]++
			// The new leader's answer (forwarded), a refusal, or none (the
			// connection closed by the restart): never the old copy's 404.
			if a.status != http.StatusOK && a.status != http.StatusServiceUnavailable && a.status != 0 {
				t.Errorf("a read of the new leader's pet at the resumed former leader: %d %s", a.status, a.body)
			}
		case a.status == http.StatusCreated:
			var pet struct{ ID int64 }
			_ = json.Unmarshal(a.body, &pet)
			acks = append(acks, ack{id: pet.ID, body: a.body})
			fallthrough
		default:
			outcomes[fmt.Sprintf("createPet %d", a.status)]++
		}
	}
	t.Logf("answers of the resumed former leader, by status (0: no answer): %v", outcomes)
	// Every 201 it gave is the new leader's, byte for byte.
	present, missing := checkAcknowledged(t, next, key, acks, time.Now().Add(time.Hour))
	if missing != 0 || present != len(acks) {
		t.Errorf("%d of the former leader's 201s are not on the new leader", len(acks)-present)
	}
	waitUntil(t, 20*time.Second, "the former leader follows", old.follows)
}

// send sends a request with the key, and returns its status (0: no answer)
// and body.
func send(t *testing.T, method, url, key, body string) (int, []byte) {
	client := &http.Client{Timeout: 20 * time.Second}
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// Under systemd's Type=notify a follower is started once it listens with
// its gate (READY=1), though PocketBase never serves on it, and says
// STOPPING=1 at SIGTERM: a unit of a follower does not time out.
func TestClusterFollowerNotifiesSystemd(t *testing.T) {
	c := startCluster(t, 2)
	c.nodes[0].start(t)
	waitUntil(t, 20*time.Second, "the first node leads", c.nodes[0].leads)
	read := listenAsSystemd(t)
	follower := c.nodes[1]
	follower.start(t)
	read("READY=1")
	waitUntil(t, 20*time.Second, "the second node follows", follower.follows)
	if err := follower.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	read("STOPPING=1")
}
