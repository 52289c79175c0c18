package cluster_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"petstore/internal/cluster"
	"petstore/internal/clustergate"
	"petstore/internal/replica"
	"petstore/testkit/etcdtest"
)

// nodeProcessEnv makes the test binary a node process (runNodeProcess):
// its value is the etcd endpoints.
const nodeProcessEnv = "CLUSTER_TEST_NODE_ETCD"

func TestMain(m *testing.M) {
	if endpoints := os.Getenv(nodeProcessEnv); endpoints != "" {
		runNodeProcess(endpoints)
		return
	}
	os.Exit(m.Run())
}

// runNodeProcess runs node "paused" with the stand-in service of startNode
// on a free port, which it prints, until it is killed.
func runNodeProcess(endpoints string) {
	var node *cluster.Node
	var gate http.Handler
	server := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if node.Status().Role != cluster.Leader {
			gate.ServeHTTP(w, r)
			return
		}
		if r.Method == http.MethodPost && !node.MayWrite() {
			http.Error(w, "fenced", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Node", "paused")
		w.WriteHeader(http.StatusCreated)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	url := "http://" + ln.Addr().String()
	root, err := replica.ParseURL(testReplicaURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cfg := cluster.Config{Endpoints: strings.Split(endpoints, ","), Name: "test", NodeName: "paused", AdvertiseURL: url, TTL: testTTL, Secret: []byte(testSecret),
		Replica: root}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	node = cluster.New(cfg, log, cluster.Options{OnElected: func(int64) { _ = node.Serving(context.Background()) }})
	gate = clustergate.New(node, nil, 0, log)
	go func() { _ = node.Run(context.Background()) }()
	fmt.Println(url)
	_ = server.Serve(ln)
}

func TestAPausedLeaderIsFencedWhenItResumes(t *testing.T) {
	etcd := etcdtest.Start(t, 3)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), nodeProcessEnv+"="+strings.Join(etcd.Endpoints(), ","))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("paused node's log:\n%s", logs.String())
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pausedURL := strings.TrimSpace(line)
	waitFor(t, 10*time.Second, "the node process leads", func() bool {
		resp, err := http.Post(pausedURL+"/v1/pets", "application/json", nil)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusCreated && resp.Header.Get("Node") == "paused"
	})
	b := startNode(t, etcd, "b", cluster.Options{})
	c := startNode(t, etcd, "c", cluster.Options{})
	waitFor(t, 5*time.Second, "b and c follow", func() bool {
		return b.Status().Role == cluster.Follower && c.Status().Role == cluster.Follower
	})

	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*testTTL, "b or c leads", func() bool { return len(leaders(b, c)) == 1 })
	time.Sleep(testTTL)
	next := leaders(b, c)[0]
	// Requests wait in the paused process's listen queue, to be read the
	// moment it resumes, before it hears from etcd.
	results := make(chan string, 64)
	for range 16 {
		go func() {
			resp, err := http.Post(pausedURL+"/v1/pets", "application/json", nil)
			if err != nil {
				results <- "error " + err.Error()
				return
			}
			resp.Body.Close()
			results <- fmt.Sprintf("%d %s", resp.StatusCode, resp.Header.Get("Node"))
		}()
	}
	time.Sleep(200 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	for range 16 {
		got := <-results
		if got != "201 "+next.name && !strings.HasPrefix(got, "503") {
			t.Errorf("a request to the resumed former leader: %q; want a 201 from the new leader %s, or a 503", got, next)
		}
	}
	// And afterwards: it follows, and forwards.
	waitFor(t, 3*testTTL, "the former leader forwards to the new one", func() bool {
		resp, err := http.Post(pausedURL+"/v1/pets", "application/json", nil)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusCreated && resp.Header.Get("Node") == next.name
	})
}
