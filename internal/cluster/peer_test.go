package cluster_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
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

// peerNode is a node that never talks to etcd, holding secret (none: it
// runs with --cluster-insecure-peers).
func peerNode(name, secret string) *cluster.Node {
	cfg := cluster.Config{Endpoints: []string{"http://127.0.0.1:1"}, Name: "test", NodeName: name,
		AdvertiseURL: "http://10.0.0.1:8090", TTL: testTTL}
	if secret != "" {
		cfg.Secret = []byte(secret)
	}
	return cluster.New(cfg, slog.New(slog.DiscardHandler), cluster.Options{})
}

func TestLeaderRecordsAreBelievedOnlyWhenAuthenticated(t *testing.T) {
	leader, follower := peerNode("a", testSecret), peerNode("b", testSecret)
	for _, term := range []int64{0, 42} {
		got, err := follower.ReadLeader(leader.LeaderValue(term), 42)
		if err != nil || got != (cluster.LeaderInfo{Node: "a", URL: "http://10.0.0.1:8090", Term: 42}) {
			t.Errorf("the leader's record of term %d: %+v, %v", term, got, err)
		}
	}
	genuine := leader.LeaderValue(42)
	for _, tc := range []struct {
		name, value string
		term        int64
		why         string
	}{
		{"the issue's forgery", `{"url":"http://attacker"}`, 42, "has no MAC"},
		{"another URL under the leader's MAC", strings.Replace(genuine, "10.0.0.1", "203.0.113.9", 1), 42, "does not verify"},
		{"another node's name", strings.Replace(genuine, `"node":"a"`, `"node":"c"`, 1), 42, "does not verify"},
		{"a MAC of another secret", peerNode("a", testSecret+" but another").LeaderValue(42), 42, "does not verify"},
		{"another term's record, copied", genuine, 43, "term 42's, under a key of term 43"},
		{"no record", "attacker", 42, "holds no leader"},
	} {
		if got, err := follower.ReadLeader(tc.value, tc.term); err == nil || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: %+v, %v; want refused: %s", tc.name, got, err, tc.why)
		}
	}
	// Without the secret, every record is believed, as before it.
	if got, err := peerNode("b", "").ReadLeader(`{"url":"http://attacker"}`, 42); err != nil || got.URL != "http://attacker" {
		t.Errorf("a node without the secret: %+v, %v", got, err)
	}
}

// attacker is a server of someone who can write to etcd, which counts the
// requests it gets and those with an Authorization header.
type attacker struct {
	*httptest.Server
	mu                   sync.Mutex
	requests, authorized int
}

func startAttacker(t *testing.T) *attacker {
	a := &attacker{}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.requests++
		if r.Header.Get("Authorization") != "" {
			a.authorized++
		}
		a.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *attacker) got() (requests, authorized int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.requests, a.authorized
}

// postWithKey sends a create with an API key to url.
func postWithKey(t *testing.T, url string) (int, apiError) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/pets", strings.NewReader(`{"name":"Rex"}`))
	req.Header.Set("Authorization", "Bearer pk_live_the-clients-key")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body apiError
	if resp.StatusCode != http.StatusCreated {
		body = errorBody(t, resp)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, body
}

// A leader's record written by someone who can write to etcd, as the issue
// did (etcdctl put --ignore-lease /<cluster>/leader/<key>
// '{"url":"http://attacker"}'): with the cluster's secret, the followers
// refuse it and forward nothing there; without it
// (--cluster-insecure-peers), every request goes there, API keys included.
func TestAForgedLeaderRecordGetsNoRequest(t *testing.T) {
	for _, secure := range []bool{true, false} {
		t.Run(map[bool]string{true: "with the secret", false: "with --cluster-insecure-peers"}[secure], func(t *testing.T) {
			etcd := etcdtest.Start(t, 1)
			evil := startAttacker(t)
			cli := etcd.Client(t, "", "")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			// A record without a lease, before any node campaigns: it
			// holds the election until someone deletes it.
			if _, err := cli.Put(ctx, "/test/leader/forged", `{"node":"x","url":"`+evil.URL+`"}`); err != nil {
				t.Fatal(err)
			}
			insecure := func(f *cluster.Flags) {
				if !secure {
					f.SecretFile, f.InsecurePeers = "", true
				}
			}
			nodes := []*testNode{startNodeWith(t, etcd, "a", insecure, cluster.Options{}), startNodeWith(t, etcd, "b", insecure, cluster.Options{})}
			defer func() {
				if t.Failed() {
					for _, n := range nodes {
						t.Logf("%s's log:\n%s", n, n.logs.String())
					}
				}
			}()
			if !secure {
				waitFor(t, 10*time.Second, "the nodes follow the forged leader", func() bool {
					s := nodes[0].Status()
					return s.Leader != nil && s.Leader.URL == evil.URL
				})
				postWithKey(t, nodes[0].server.URL)
				if requests, authorized := evil.got(); requests != 1 || authorized != 1 {
					t.Errorf("the attacker got %d requests, %d with the client's key; want 1 and 1", requests, authorized)
				}
				return
			}
			for _, n := range nodes {
				waitFor(t, 10*time.Second, n.name+" refuses the record", func() bool { return n.Status().ForgedRecords == 1 })
			}
			for range 3 {
				for _, n := range nodes {
					status, body := postWithKey(t, n.server.URL)
					if status != http.StatusServiceUnavailable || body.Code != "not_leader" || !strings.Contains(body.Message, "does not prove that it belongs to the cluster") {
						t.Errorf("POST to %s: %d %+v, want 503 not_leader naming the refused record", n, status, body)
					}
				}
			}
			resp := get(t, nodes[0].server.URL+"/readyz")
			if body := errorBody(t, resp); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body.Message, "refuses the leader named in etcd") {
				t.Errorf("/readyz: %d %+v", resp.StatusCode, body)
			}
			// A second forgery, with a MAC: refused and counted too.
			if _, err := cli.Put(ctx, "/test/leader/forged", `{"node":"a","url":"`+evil.URL+`","term":0,"mac":"AAAA"}`); err != nil {
				t.Fatal(err)
			}
			for _, n := range nodes {
				waitFor(t, 5*time.Second, n.name+" refuses the second record", func() bool { return n.Status().ForgedRecords == 2 })
				if lines := strings.Count(n.logs.String(), "refusing the leader named in etcd"); lines != 2 {
					t.Errorf("%s logged %d refusals, want one a record", n, lines)
				}
			}
			postWithKey(t, nodes[1].server.URL)

			// Once the record is gone, a node leads and the other forwards
			// to it.
			if _, err := cli.Delete(ctx, "/test/leader/forged"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 10*time.Second, "a leader", func() bool { return len(leaders(nodes...)) == 1 })
			leader := leaders(nodes...)[0]
			for _, n := range nodes {
				if n == leader {
					continue
				}
				waitFor(t, 5*time.Second, "the follower knows the leader", func() bool { return n.Status().Leader != nil })
				if status, body := postWithKey(t, n.server.URL); status != http.StatusCreated {
					t.Errorf("POST to follower %s once the forged record is gone: %d %+v", n, status, body)
				}
			}
			if requests, authorized := evil.got(); requests != 0 || authorized != 0 {
				t.Errorf("the attacker got %d requests, %d with the client's key", requests, authorized)
			}
		})
	}
}

// The repro itself: the serving leader's own election key
// overwritten with the attacker's URL while clients write through the
// followers. The leader steps down (its key is no longer its own), and the
// followers, who see the record before the leader goes, send the attacker
// nothing.
func TestAnOverwrittenLeaderRecordGetsNoRequest(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	evil := startAttacker(t)
	nodes := []*testNode{startNode(t, etcd, "a", cluster.Options{}), startNode(t, etcd, "b", cluster.Options{}), startNode(t, etcd, "c", cluster.Options{})}
	waitFor(t, 10*time.Second, "a leader", func() bool { return len(leaders(nodes...)) == 1 })
	old := leaders(nodes...)[0]
	var followers []*testNode
	for _, n := range nodes {
		if n != old {
			followers = append(followers, n)
			waitFor(t, 5*time.Second, "the followers know the leader", func() bool { return n.Status().Leader != nil })
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, n := range followers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				postWithKey(t, n.server.URL)
			}
		})
	}
	cli := etcd.Client(t, "", "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first, err := cli.Get(ctx, "/test/leader/", clientv3.WithFirstCreate()...)
	if err != nil || len(first.Kvs) != 1 {
		t.Fatalf("the leader's key: %v %+v", err, first)
	}
	if _, err := cli.Put(ctx, string(first.Kvs[0].Key), `{"url":"`+evil.URL+`"}`, clientv3.WithIgnoreLease()); err != nil {
		t.Fatal(err)
	}
	for _, n := range followers {
		waitFor(t, 5*time.Second, n.name+" refuses the overwritten record", func() bool { return n.Status().ForgedRecords == 1 })
	}
	waitFor(t, 10*time.Second, "a leader again", func() bool { return len(leaders(nodes...)) == 1 })
	close(stop)
	wg.Wait()
	if requests, authorized := evil.got(); requests != 0 || authorized != 0 {
		t.Errorf("the attacker got %d requests, %d with the client's key", requests, authorized)
	}
}

// A request that names a forwarding node is served by the leader only
// when the forwarding node proved it: a follower's is, a client's own is
// refused.
func TestTheLeaderRefusesUnauthenticatedForwards(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	nodes := []*testNode{startNode(t, etcd, "a", cluster.Options{}), startNode(t, etcd, "b", cluster.Options{})}
	waitFor(t, 10*time.Second, "a leader", func() bool { return len(leaders(nodes...)) == 1 })
	leader, follower := nodes[0], nodes[1]
	if leaders(nodes...)[0] != leader {
		leader, follower = follower, leader
	}
	waitFor(t, 5*time.Second, "the follower knows the leader", func() bool { return follower.Status().Leader != nil })
	if status, body := postWithKey(t, follower.server.URL); status != http.StatusCreated {
		t.Fatalf("POST through the follower: %d %+v", status, body)
	}
	for _, headers := range []map[string]string{
		{clustergate.ForwardedByHeader: follower.name, clustergate.ForwardedForHeader: "192.0.2.7"},
		{clustergate.ForwardedByHeader: follower.name, clustergate.ForwardedForHeader: "192.0.2.7", clustergate.ForwardedAtHeader: strconv.FormatInt(time.Now().Unix(), 10),
			clustergate.ForwardedAuthHeader: "Zm9yZ2Vk"},
	} {
		req, _ := http.NewRequest(http.MethodPost, leader.server.URL+"/v1/pets", strings.NewReader(`{"name":"Rex"}`))
		for h, v := range headers {
			req.Header.Set(h, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("a forwarded request with %v straight to the leader: %d, want it refused", headers, resp.StatusCode)
		}
	}
}
