package clustergate_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/internal/cluster"
	"petstore/internal/clustergate"
	"petstore/testkit/etcdtest"
)

// syncBuffer is a log the node writes while the test reads it.
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

// The gate answers on the node's listener at once, before the node leads;
// once it leads, the gate hands the listener over, open, and clients keep
// their connection across the handover.
func TestTheGateHandsItsListenerToTheLeader(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("the test cluster's secret, 32 bytes and more\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := cluster.Flags{Etcd: strings.Join(etcd.Endpoints(), ","), Name: "test", NodeName: "a",
		ReplicaURL: "file://" + t.TempDir(), TTL: 2 * time.Second, SecretFile: secret}.Config(addr)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	p, err := cluster.Start(cfg, t.TempDir(), log, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("log:\n%s", logs.String())
		}
	}()
	t.Cleanup(func() { _ = p.Close() })
	follower := clustergate.Serve(ln.(*net.TCPListener), &http.Server{Handler: clustergate.New(p.Node, nil, 0, log)},
		func(ln net.Listener) net.Listener { return ln })
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz from the gate: %d", resp.StatusCode)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	term, err := p.WaitElected(ctx)
	if err != nil {
		t.Fatal(err)
	}
	listener := follower.Handover(ctx)
	if listener.Addr().String() != addr {
		t.Fatalf("listener on %s, want %s", listener.Addr(), addr)
	}
	server := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Served-By", "leader")
		w.WriteHeader(http.StatusCreated)
	})}
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(func() { _ = server.Close() })
	p.Serving()
	resp, err = client.Post("http://"+addr+"/v1/pets", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Served-By") != "leader" {
		t.Fatalf("after the handover: %d %q", resp.StatusCode, resp.Header.Get("Served-By"))
	}
	if s := p.Node.Status(); s.Role != cluster.Leader || s.Term != term || s.Served != term || !p.Node.MayWrite() {
		t.Errorf("status %+v, term %d", s, term)
	}
	// Close returns once every goroutine the node started has ended.
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	buf := make([]byte, 1<<20)
	for g := range strings.SplitSeq(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "petstore/internal/cluster.(*") && !strings.Contains(g, "testing.tRunner") {
			t.Errorf("a goroutine of the node runs after Close:\n%s", g)
		}
	}
}
