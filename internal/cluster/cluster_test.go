package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"petstore/internal/cluster"
	"petstore/internal/clustergate"
	"petstore/testkit/etcdtest"
)

// testTTL is the shortest lease cluster mode allows: the tests wait for
// leases to end.
const testTTL = 2 * time.Second

func TestConfigRefusesBadValuesNamingTheFlag(t *testing.T) {
	secret := secretFile(t, testSecret)
	good := func() cluster.Flags {
		return cluster.Flags{Etcd: "http://127.0.0.1:2379,http://127.0.0.1:2380", Name: "petstore", NodeName: "a",
			AdvertiseURL: "http://127.0.0.1:8090", ReplicaURL: "file:///var/lib/petstore-replica", TTL: 5 * time.Second, SecretFile: secret}
	}
	short := secretFile(t, strings.Repeat("s", cluster.MinSecret-1))
	open := secretFile(t, testSecret)
	if err := os.Chmod(open, 0o604); err != nil {
		t.Fatal(err)
	}
	password := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(password, []byte("from the file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := good().Config("127.0.0.1:8090")
	if err != nil {
		t.Fatalf("a good configuration is refused: %v", err)
	}
	if want := []string{"http://127.0.0.1:2379", "http://127.0.0.1:2380"}; !slices.Equal(c.Endpoints, want) || c.Replica.String() != "file:///var/lib/petstore-replica" {
		t.Errorf("parsed %q and %s, want %q and the replica URL", c.Endpoints, c.Replica, want)
	}
	for _, tc := range []struct {
		change func(*cluster.Flags)
		flag   string
	}{
		{func(f *cluster.Flags) { f.Etcd = "127.0.0.1:2379" }, "--cluster-etcd"},
		{func(f *cluster.Flags) { f.Etcd = "http://[::1" }, "--cluster-etcd"},
		{func(f *cluster.Flags) { f.Etcd = " , " }, "--cluster-etcd"},
		{func(f *cluster.Flags) { f.Name = "" }, "--cluster-name"},
		{func(f *cluster.Flags) { f.Name = "a/b" }, "--cluster-name"},
		{func(f *cluster.Flags) { f.NodeName = "a b" }, "--node-name"},
		{func(f *cluster.Flags) { f.AdvertiseURL = "http//x" }, "--advertise-url"},
		{func(f *cluster.Flags) { f.AdvertiseURL = "http://x:8090/v1" }, "--advertise-url"},
		{func(f *cluster.Flags) { f.ReplicaURL = "" }, "--replica-url"},
		{func(f *cluster.Flags) { f.ReplicaURL = "/var/lib/replica" }, "--replica-url"},
		{func(f *cluster.Flags) { f.ReplicaURL = "s3://" }, "--replica-url"},
		// A host in a file URL: a share's path mistyped, refused by the
		// replica's own parse, before the data directory is opened.
		{func(f *cluster.Flags) { f.ReplicaURL = "file://nas/x" }, "--replica-url"},
		{func(f *cluster.Flags) { f.TTL = time.Second }, "--cluster-ttl"},
		{func(f *cluster.Flags) { f.TTL = 61 * time.Second }, "--cluster-ttl"},
		{func(f *cluster.Flags) { f.TTL = 2500 * time.Millisecond }, "--cluster-ttl"},
		{func(f *cluster.Flags) { f.SetAsideRetention = -time.Hour }, "--cluster-set-aside-retention -1h0m0s"},
		{func(f *cluster.Flags) { f.SecretFile = "" }, "--cluster-secret-file is needed"},
		{func(f *cluster.Flags) { f.SecretFile = short }, "--cluster-secret-file " + short + " holds 31 bytes"},
		{func(f *cluster.Flags) { f.SecretFile = open }, "--cluster-secret-file " + open + " is open to every user"},
		{func(f *cluster.Flags) { f.SecretFile = open + ".missing" }, "--cluster-secret-file"},
		{func(f *cluster.Flags) { f.InsecurePeers = true }, "--cluster-secret-file and --cluster-insecure-peers"},
		{func(f *cluster.Flags) { f.EtcdCA = "/nowhere/ca.pem" }, "--cluster-etcd: \"http://127.0.0.1:2379\" is not https://"},
		{func(f *cluster.Flags) { f.Etcd, f.EtcdCA = "https://127.0.0.1:2379", "/nowhere/ca.pem" }, "--cluster-etcd-ca"},
		{func(f *cluster.Flags) { f.Etcd, f.EtcdCA = "https://127.0.0.1:2379", secret }, "--cluster-etcd-ca " + secret + " holds no PEM certificate"},
		{func(f *cluster.Flags) { f.Etcd, f.EtcdCert = "https://127.0.0.1:2379", "/nowhere/cert.pem" }, "--cluster-etcd-cert and --cluster-etcd-key go together"},
		{func(f *cluster.Flags) { f.Etcd, f.EtcdCert, f.EtcdKey = "https://127.0.0.1:2379", secret, secret }, "--cluster-etcd-cert"},
		{func(f *cluster.Flags) { f.EtcdUser = "petstore" }, "--cluster-etcd-user \"petstore\" needs its password"},
		{func(f *cluster.Flags) { f.EtcdPasswordFile = password }, "--cluster-etcd-password-file is the password of --cluster-etcd-user"},
		{func(f *cluster.Flags) { f.EtcdUser, f.EtcdPasswordFile = "petstore", password+".missing" }, "--cluster-etcd-password-file"},
	} {
		f := good()
		tc.change(&f)
		_, err := f.Config("127.0.0.1:8090")
		if err == nil || !strings.HasPrefix(err.Error(), tc.flag) {
			t.Errorf("%+v: error %v, want one naming %s", f, err, tc.flag)
		}
	}

	// The secret, and the password from its file or else its variable;
	// --cluster-insecure-peers runs without a secret.
	if c.Secret == nil || string(c.Secret) != testSecret || c.User != "" || c.Password != "" || c.TLS != nil {
		t.Errorf("a good configuration's secret %q, user %q, TLS %v", c.Secret, c.User, c.TLS)
	}
	f := good()
	f.EtcdUser, f.EtcdPasswordFile = "petstore", password
	t.Setenv(cluster.EtcdPasswordVar, "from the variable")
	if c, err := f.Config("127.0.0.1:8090"); err != nil || c.User != "petstore" || c.Password != "from the file" {
		t.Errorf("--cluster-etcd-password-file: user %q password %q, %v", c.User, c.Password, err)
	}
	f.EtcdPasswordFile = ""
	if c, err := f.Config("127.0.0.1:8090"); err != nil || c.Password != "from the variable" {
		t.Errorf("%s: password %q, %v", cluster.EtcdPasswordVar, c.Password, err)
	}
	f = good()
	f.SecretFile, f.InsecurePeers = "", true
	if c, err := f.Config("127.0.0.1:8090"); err != nil || c.Secret != nil {
		t.Errorf("--cluster-insecure-peers: secret %q, %v", c.Secret, err)
	}

	// Without --cluster-etcd, only --cluster-sync is refused.
	if _, err := (cluster.Flags{Sync: true}).Config("127.0.0.1:8090"); err == nil || !strings.HasPrefix(err.Error(), "--cluster-sync") {
		t.Errorf("--cluster-sync without --cluster-etcd: error %v, want one naming --cluster-sync", err)
	}
	if c, err := (cluster.Flags{ReplicaURL: "not a URL"}).Config("127.0.0.1:8090"); err != nil || c.Enabled() {
		t.Errorf("cluster mode off: %+v, %v", c, err)
	}

	// --advertise-url defaults to --http when it names a reachable host.
	f = good()
	f.AdvertiseURL = ""
	if c, err := f.Config("10.0.0.7:8090"); err != nil || c.AdvertiseURL != "http://10.0.0.7:8090" {
		t.Errorf("--http 10.0.0.7:8090 without --advertise-url: %q, %v", c.AdvertiseURL, err)
	}
	for _, addr := range []string{"0.0.0.0:8090", ":8090", "[::]:8090"} {
		if _, err := f.Config(addr); err == nil || !strings.HasPrefix(err.Error(), "--advertise-url") {
			t.Errorf("--http %s without --advertise-url: error %v", addr, err)
		}
	}
}

// testNode is a node with the HTTP server its --advertise-url names: its
// gate while it does not serve, and a stand-in for the service once it
// leads, which answers POST with 201 only while the fence is open, and
// refuses a forwarded request that is not authenticated with 403.
type testNode struct {
	*cluster.Node
	name   string
	server *httptest.Server
	cancel context.CancelFunc
	done   chan error
	logs   *syncBuffer
}

// testSecret is the test nodes' --cluster-secret-file's content.
const testSecret = "a test cluster's secret, 32 bytes and more"

// secretFile is a --cluster-secret-file holding secret.
func secretFile(t *testing.T, secret string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// nodeFlags are the flags of a test node named name of the cluster "test",
// holding testSecret, whose URL is url.
func nodeFlags(t *testing.T, etcd *etcdtest.Cluster, name, url string) cluster.Flags {
	return cluster.Flags{Etcd: strings.Join(etcd.Endpoints(), ","), Name: "test", NodeName: name,
		AdvertiseURL: url, ReplicaURL: testReplicaURL, TTL: testTTL, SecretFile: secretFile(t, testSecret)}
}

// testReplicaURL is the test nodes' replica: the cluster tests ship nothing.
const testReplicaURL = "file:///unused"

func startNode(t *testing.T, etcd *etcdtest.Cluster, name string, opts cluster.Options) *testNode {
	t.Helper()
	return startNodeWith(t, etcd, name, nil, opts)
}

// startNodeWith starts a node whose flags change changes (nil: none).
func startNodeWith(t *testing.T, etcd *etcdtest.Cluster, name string, change func(*cluster.Flags), opts cluster.Options) *testNode {
	t.Helper()
	tn := &testNode{name: name, done: make(chan error, 1), logs: &syncBuffer{}}
	var gate http.Handler
	tn.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tn.Status().Role != cluster.Leader {
			gate.ServeHTTP(w, r)
			return
		}
		if _, named, err := clustergate.VerifyForward(tn.Node, r, time.Now()); named && err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		if r.Method == http.MethodPost && !tn.MayWrite() {
			http.Error(w, "fenced", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Node", name)
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(tn.server.Close)
	flags := nodeFlags(t, etcd, name, tn.server.URL)
	if change != nil {
		change(&flags)
	}
	cfg, err := flags.Config("")
	if err != nil {
		t.Fatal(err)
	}
	elected := opts.OnElected
	opts.OnElected = func(term int64) {
		if elected != nil {
			elected(term)
		}
		// It fails when the term ends first (a Resign, an outage).
		if err := tn.Serving(context.Background()); err != nil {
			t.Logf("%s: %v", name, err)
		}
	}
	log := slog.New(slog.NewTextHandler(tn.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	node := cluster.New(cfg, log, opts)
	tn.Node = node
	gate = clustergate.New(node, nil, 0, log)
	ctx, cancel := context.WithCancel(context.Background())
	tn.cancel = cancel
	go func() { tn.done <- node.Run(ctx) }()
	t.Cleanup(func() { tn.kill() })
	return tn
}

// kill ends the node as SIGKILL would: no resignation; its lease ends by
// itself within the TTL.
func (tn *testNode) kill() {
	tn.cancel()
	<-tn.done
	tn.done <- nil // kill may run again, from the cleanup
	_ = tn.Close()
}

func (tn *testNode) String() string { return tn.name }

// waitFor polls cond every 20 ms until it holds or within passes.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > within {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// leaders are the nodes whose fence is open.
func leaders(nodes ...*testNode) []*testNode {
	var open []*testNode
	for _, n := range nodes {
		if n.MayWrite() {
			open = append(open, n)
		}
	}
	return open
}

func TestOneLeaderTheOthersFollowAndForward(t *testing.T) {
	etcd := etcdtest.Start(t, 3)
	a := startNode(t, etcd, "a", cluster.Options{})
	b := startNode(t, etcd, "b", cluster.Options{})
	c := startNode(t, etcd, "c", cluster.Options{})
	nodes := []*testNode{a, b, c}
	waitFor(t, 10*time.Second, "one leader, two followers", func() bool {
		roles := map[cluster.Role]int{}
		for _, n := range nodes {
			roles[n.Status().Role]++
		}
		return roles[cluster.Leader] == 1 && roles[cluster.Follower] == 2
	})
	open := leaders(nodes...)
	if len(open) != 1 {
		t.Fatalf("nodes that may write: %v, want exactly the leader", open)
	}
	leader := open[0]
	lead := leader.Status()
	if lead.Term == 0 || lead.Leader == nil || lead.Leader.Node != leader.name || lead.Leader.Term != lead.Term {
		t.Fatalf("leader's status %+v", lead)
	}
	for _, n := range nodes {
		if n == leader {
			continue
		}
		s := n.Status()
		if s.Leader == nil || *s.Leader != (cluster.LeaderInfo{Node: leader.name, URL: leader.server.URL, Term: lead.Term}) {
			t.Errorf("%s sees the leader as %+v, want %s at term %d", n, s.Leader, leader, lead.Term)
		}
		// A follower forwards: the leader answers.
		resp := post(t, n.server.URL+"/v1/pets")
		if resp.StatusCode != http.StatusCreated || resp.Header.Get("Node") != leader.name {
			t.Errorf("POST to follower %s: %d from %q, want 201 from the leader %s", n, resp.StatusCode, resp.Header.Get("Node"), leader)
		}
		// /healthz 200, /readyz 503 naming the leader.
		if resp := get(t, n.server.URL+"/healthz"); resp.StatusCode != http.StatusOK {
			t.Errorf("follower %s /healthz: %d", n, resp.StatusCode)
		}
		resp = get(t, n.server.URL+"/readyz")
		body := errorBody(t, resp)
		if resp.StatusCode != http.StatusServiceUnavailable || body.Code != "not_ready" ||
			!strings.Contains(body.Message, "the leader is "+leader.name+" at "+leader.server.URL) {
			t.Errorf("follower %s /readyz: %d %+v", n, resp.StatusCode, body)
		}
		// A request that another node forwarded is never forwarded again.
		req, _ := http.NewRequest(http.MethodPost, n.server.URL+"/v1/pets", nil)
		req.Header.Set(clustergate.ForwardedByHeader, "elsewhere")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body = errorBody(t, resp)
		if resp.StatusCode != http.StatusServiceUnavailable || body.Code != "not_leader" || resp.Header.Get("Retry-After") != "1" {
			t.Errorf("forwarded request at follower %s: %d %+v Retry-After %q", n, resp.StatusCode, body, resp.Header.Get("Retry-After"))
		}
		// The gate's 503 carries the rate-limit headers, as every /v1
		// answer does: this node admits nothing until Retry-After ends.
		reset, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64)
		if now := time.Now().Unix(); err != nil || reset < now || reset > now+2 ||
			resp.Header.Get("X-RateLimit-Limit") != "0" || resp.Header.Get("X-RateLimit-Remaining") != "0" {
			t.Errorf("forwarded request at follower %s: X-RateLimit-Limit %q, -Remaining %q, -Reset %q; want 0, 0 and a second from now",
				n, resp.Header.Get("X-RateLimit-Limit"), resp.Header.Get("X-RateLimit-Remaining"), resp.Header.Get("X-RateLimit-Reset"))
		}
		// The gate's own answers name their request, as the document says
		// every answer does.
		if id := resp.Header.Get("Request-Id"); len(id) != 32 || resp.Header.Get("X-Request-Id") != id {
			t.Errorf("forwarded request at follower %s: Request-Id %q, X-Request-Id %q", n, id, resp.Header.Get("X-Request-Id"))
		}
	}

	// Every node is registered, with its role.
	regs, err := a.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "registrations with roles", func() bool {
		regs, err = a.Nodes(context.Background())
		if err != nil || len(regs) != 3 {
			return false
		}
		for _, r := range regs {
			want := cluster.Follower
			if r.Node == leader.name {
				want = cluster.Leader
			}
			if r.Role != want {
				return false
			}
		}
		return true
	})
	t.Logf("registrations: %+v", regs)

	// Any node's view names the leader, its term and every node, the
	// leader's registration with its term.
	for _, n := range nodes {
		v, err := n.View(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if v.Leader != leader.name || v.Term == 0 || len(v.Nodes) != 3 {
			t.Fatalf("%s's view: %+v", n, v)
		}
		for _, nv := range v.Nodes {
			if nv.Leader != (nv.Node == leader.name) || nv.Leader && nv.Term != v.Term || !nv.Leader && nv.Term != 0 {
				t.Errorf("%s's view of %s: %+v (term %d)", n, nv.Node, nv, v.Term)
			}
		}
	}
}

func TestLeaderKilledAFollowerTakesOverWithinTheTTL(t *testing.T) {
	etcd := etcdtest.Start(t, 3)
	nodes := []*testNode{
		startNode(t, etcd, "a", cluster.Options{}),
		startNode(t, etcd, "b", cluster.Options{}),
		startNode(t, etcd, "c", cluster.Options{}),
	}
	waitFor(t, 10*time.Second, "a leader", func() bool { return len(leaders(nodes...)) == 1 })
	old := leaders(nodes...)[0]
	oldTerm := old.Status().Term
	var rest []*testNode
	for _, n := range nodes {
		if n != old {
			rest = append(rest, n)
		}
	}
	old.kill()
	took := waitFor(t, testTTL+3*time.Second, "a new leader", func() bool { return len(leaders(rest...)) == 1 })
	t.Logf("new leader %v %s after the kill (TTL %s)", leaders(rest...), took, testTTL)
	next := leaders(rest...)[0]
	if term := next.Status().Term; term <= oldTerm {
		t.Errorf("new term %d, old %d: a new term is always greater", term, oldTerm)
	}
	// The remaining follower now forwards to the new leader.
	for _, n := range rest {
		if n == next {
			continue
		}
		waitFor(t, 2*time.Second, "the follower sees the new leader", func() bool {
			s := n.Status()
			return s.Leader != nil && s.Leader.Node == next.name
		})
		if resp := post(t, n.server.URL+"/v1/pets"); resp.StatusCode != http.StatusCreated || resp.Header.Get("Node") != next.name {
			t.Errorf("POST to %s: %d from %q, want 201 from %s", n, resp.StatusCode, resp.Header.Get("Node"), next)
		}
	}
}

func TestResignHandsOverAtOnce(t *testing.T) {
	etcd := etcdtest.Start(t, 3)
	nodes := []*testNode{startNode(t, etcd, "a", cluster.Options{}), startNode(t, etcd, "b", cluster.Options{})}
	waitFor(t, 10*time.Second, "a leader", func() bool { return len(leaders(nodes...)) == 1 })
	old := leaders(nodes...)[0]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := old.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if old.MayWrite() {
		t.Fatal("a resigned leader may still write")
	}
	var other *testNode
	for _, n := range nodes {
		if n != old {
			other = n
		}
	}
	waitFor(t, time.Second, "the other node leads well within the TTL", other.MayWrite)
	t.Logf("handover took %s", time.Since(start))
	time.Sleep(testTTL)
	if old.MayWrite() || old.Status().Role == cluster.Leader {
		t.Errorf("the resigned node leads again: %+v", old.Status())
	}
}

func TestATakenNodeNameIsRefused(t *testing.T) {
	etcd := etcdtest.Start(t, 3)
	first := startNode(t, etcd, "same", cluster.Options{})
	waitFor(t, 10*time.Second, "the first node leads", first.MayWrite)
	second := startNode(t, etcd, "same", cluster.Options{})
	var err error
	select {
	case err = <-second.done:
		second.done <- err
	case <-time.After(testTTL + 5*time.Second):
		t.Fatal("the second node with a taken name still runs")
	}
	if !errors.Is(err, cluster.ErrNameTaken) || !strings.Contains(err.Error(), first.server.URL) || !strings.Contains(err.Error(), "--node-name") {
		t.Errorf("error %v: want one naming the live node's URL and --node-name", err)
	}
	if !first.MayWrite() {
		t.Error("the first node lost its leadership")
	}
}

func TestANodeRestartedWithinTheTTLTakesItsNameBack(t *testing.T) {
	etcd := etcdtest.Start(t, 3)
	first := startNode(t, etcd, "a", cluster.Options{})
	waitFor(t, 10*time.Second, "the node leads", first.MayWrite)
	first.kill()
	again := startNode(t, etcd, "a", cluster.Options{})
	defer func() {
		if t.Failed() {
			t.Logf("log:\n%s", again.logs.String())
			select {
			case err := <-again.done:
				t.Logf("Run returned %v", err)
				again.done <- err
			default:
			}
		}
	}()
	waitFor(t, testTTL+5*time.Second, "the restarted node leads", again.MayWrite)
}

func TestQuorumLostStopsWritesWithinTheTTL(t *testing.T) {
	etcd := etcdtest.Start(t, 3)
	nodes := []*testNode{startNode(t, etcd, "a", cluster.Options{}), startNode(t, etcd, "b", cluster.Options{})}
	waitFor(t, 10*time.Second, "a leader", func() bool { return len(leaders(nodes...)) == 1 })
	leader := leaders(nodes...)[0]
	defer func() {
		if t.Failed() {
			for _, n := range nodes {
				t.Logf("%s's log:\n%s", n, n.logs.String())
			}
		}
	}()
	etcd.Members[1].Stop()
	etcd.Members[2].Stop()
	stopped := time.Now()
	// etcd's leader renews leases until it knows that it lost the quorum,
	// one election timeout (1 s here, more on a loaded machine) after it
	// last heard from it: the bound is the TTL plus 2 s.
	took := waitFor(t, testTTL+2*time.Second, "no node may write", func() bool { return len(leaders(nodes...)) == 0 })
	t.Logf("writes stopped %s after quorum was lost (TTL %s, etcd's election timeout 1s)", took, testTTL)
	// Nobody writes for as long as the quorum is lost.
	for time.Since(stopped) < 2*testTTL {
		if open := leaders(nodes...); len(open) != 0 {
			t.Fatalf("%v may write without a quorum", open)
		}
		if leader.Status().Role == cluster.Leader && leader.MayWrite() {
			t.Fatal("the old leader writes")
		}
		time.Sleep(20 * time.Millisecond)
	}
	etcd.Members[1].Restart(t)
	etcd.Members[2].Restart(t)
	defer func() {
		if t.Failed() {
			for _, n := range nodes {
				t.Logf("%s's log:\n%s", n, n.logs.String())
			}
		}
	}()
	took = waitFor(t, 20*time.Second, "a leader once quorum is back", func() bool { return len(leaders(nodes...)) == 1 })
	t.Logf("a leader %s after quorum came back", took)
}

func TestUnreachableEtcdIsRetriedAndSaid(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	etcd.Members[0].Stop()
	n := startNode(t, etcd, "a", cluster.Options{})
	waitFor(t, 10*time.Second, "the node says etcd does not answer", func() bool {
		return strings.Contains(n.logs.String(), "etcd does not answer")
	})
	resp := get(t, n.server.URL+"/readyz")
	if body := errorBody(t, resp); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body.Message, "cannot reach etcd") {
		t.Errorf("/readyz without etcd: %d %+v", resp.StatusCode, body)
	}
	if resp := post(t, n.server.URL+"/v1/pets"); resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("POST without etcd: %d", resp.StatusCode)
	}
	etcd.Members[0].Restart(t)
	waitFor(t, 20*time.Second, "the node leads once etcd answers", n.MayWrite)
	logs := n.logs.String()
	for _, want := range []string{"etcd does not answer", "etcd answers"} {
		if strings.Count(logs, want) != 1 {
			t.Errorf("the log says %q %d times, want once (at the change):\n%s", want, strings.Count(logs, want), logs)
		}
	}
}

func TestALaggingNodeStandsAside(t *testing.T) {
	etcd := etcdtest.Start(t, 3)
	var mu sync.Mutex
	behind := errors.New("15 s behind the leader's replica")
	lagging := startNode(t, etcd, "lagging", cluster.Options{Eligible: func() error {
		mu.Lock()
		defer mu.Unlock()
		return behind
	}})
	time.Sleep(testTTL)
	if lagging.MayWrite() || lagging.Status().Role == cluster.Leader {
		t.Fatal("a node that is not eligible leads")
	}
	mu.Lock()
	behind = nil
	mu.Unlock()
	waitFor(t, 5*time.Second, "the node leads once caught up", lagging.MayWrite)
	if !strings.Contains(lagging.logs.String(), "Cluster: catching up") {
		t.Errorf("the log does not say the node stood aside:\n%s", lagging.logs.String())
	}
}

type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Status  int    `json:"status"`
}

func errorBody(t *testing.T, resp *http.Response) apiError {
	t.Helper()
	var body apiError
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("not an Error body: %v", err)
	}
	return body
}

func get(t *testing.T, url string) *http.Response {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func post(t *testing.T, url string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"name":"Rex"}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// syncBuffer is a log destination that goroutines share.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A node that falls behind while it waits in the election leaves it (its
// key goes), so that it never wins with a copy too far behind; once caught
// up it campaigns again, and wins when the leader is gone.
func TestANodeThatFallsBehindLeavesTheElection(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	leader := startNode(t, etcd, "a", cluster.Options{})
	waitFor(t, 10*time.Second, "a leads", leader.MayWrite)
	var mu sync.Mutex
	var behind error
	waiting := startNode(t, etcd, "b", cluster.Options{Eligible: func() error {
		mu.Lock()
		defer mu.Unlock()
		return behind
	}})
	setBehind := func(err error) {
		mu.Lock()
		behind = err
		mu.Unlock()
	}
	client := etcd.Client(t, "", "")
	inElection := func() int {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := client.Get(ctx, "/test/leader/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		return int(resp.Count)
	}
	waitFor(t, 5*time.Second, "b waits in the election", func() bool { return inElection() == 2 })

	setBehind(errors.New("15 s behind the leader's replica"))
	took := waitFor(t, 3*time.Second, "b leaves the election once behind", func() bool { return inElection() == 1 })
	t.Logf("b left the election %s after falling behind", took)
	if !strings.Contains(waiting.logs.String(), "leaving the election") {
		t.Errorf("b's log does not say it left the election:\n%s", waiting.logs.String())
	}
	leader.kill()
	time.Sleep(testTTL + time.Second)
	if waiting.MayWrite() || waiting.Status().Role == cluster.Leader {
		t.Fatal("a node that fell behind won the election")
	}
	setBehind(nil)
	waitFor(t, 5*time.Second, "b leads once caught up", waiting.MayWrite)
}

// A node that wins with another replica than the one recorded in etcd
// (recorded after it started) does not serve.
func TestAWinnerWithAnotherReplicaDoesNotServe(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	first := startNode(t, etcd, "a", cluster.Options{})
	waitFor(t, 10*time.Second, "a leads", first.MayWrite)
	next := startNode(t, etcd, "b", cluster.Options{})
	waitFor(t, 5*time.Second, "b follows", func() bool { return next.Status().Role == cluster.Follower })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := etcd.Client(t, "", "").Put(ctx, "/test/replica", "file:///elsewhere"); err != nil {
		t.Fatal(err)
	}
	first.kill()
	waitFor(t, testTTL+3*time.Second, "b wins", func() bool { return next.Status().Term != 0 || strings.Contains(next.logs.String(), "elected leader") })
	time.Sleep(time.Second)
	if next.MayWrite() || next.Status().Role == cluster.Leader {
		t.Fatalf("b serves with another replica than the cluster's: %+v", next.Status())
	}
}
