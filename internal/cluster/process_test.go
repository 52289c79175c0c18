package cluster_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/internal/cluster"
	"petstore/testkit/etcdtest"
)

func TestProcessServesTheGateThenHandsItsListenerToTheLeader(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg, err := cluster.Flags{Etcd: strings.Join(etcd.Endpoints(), ","), Name: "test", NodeName: "a",
		ReplicaURL: "file://" + t.TempDir(), TTL: testTTL, SecretFile: secretFile(t, testSecret)}.Config(addr)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	p, err := cluster.Start(cfg, addr, t.TempDir(), slog.New(slog.NewTextHandler(logs, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("log:\n%s", logs.String())
		}
	}()
	t.Cleanup(func() { _ = p.Close() })
	// The gate answers at once, before the node leads.
	if resp := get(t, "http://"+addr+"/healthz"); resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz from the gate: %d", resp.StatusCode)
	}
	// Clients keep their connection across the handover.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	term, listener, err := p.WaitElected(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if listener.Addr().String() != addr {
		t.Fatalf("listener on %s, want %s", listener.Addr(), addr)
	}
	server := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Served-By", "leader")
		w.WriteHeader(http.StatusCreated)
	})}
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(func() { _ = server.Close() })
	p.Serving(ctx)
	resp, err := client.Post("http://"+addr+"/v1/pets", "application/json", nil)
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
}
