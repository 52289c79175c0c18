package main

import (
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"time"

	"petstore/testkit/realserver"
)

// notLeader sends every operation, through Prism, to a cluster node that
// cannot reach etcd and so has no leader to forward to: each answers 503
// not_leader.
func notLeader(c *checker, prismCLI, bin, tmp, doc string) error {
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	etcd, err := freeAddr() // nothing listens there
	if err != nil {
		return err
	}
	var output realserver.SyncBuffer
	node := exec.Command(bin, "serve", "--http", addr, "--dir", filepath.Join(tmp, "node"),
		"--cluster-etcd", "http://"+etcd, "--replica-url", "file://"+filepath.Join(tmp, "replica"), "--cluster-insecure-peers")
	node.Stdout, node.Stderr = &output, &output
	if err := node.Start(); err != nil {
		return err
	}
	defer func() {
		_ = node.Process.Kill()
		_ = node.Wait()
	}()
	upstream := "http://" + addr + "/v1"
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(upstream + "/openapi.json"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the cluster node without etcd did not answer 503 within a minute: %s", output.String())
		}
	}
	prismURL, stop, err := startPrism(prismCLI, doc, upstream)
	if err != nil {
		return err
	}
	defer stop()
	node503 := &checker{prism: prismURL, http: c.http, statuses: c.statuses}
	// Prism answers a request without credentials itself: send a key,
	// which a node without a leader cannot check.
	for _, x := range []exchange{
		{op: "listPets", method: http.MethodGet, path: "/pets", key: "pet_any"},
		{op: "createPet", method: http.MethodPost, path: "/pets", key: "pet_any", body: []byte(`{"name": "Rex", "categoryId": 1}`)},
		{op: "getPet", method: http.MethodGet, path: "/pets/1", key: "pet_any"},
		{op: "listCategories", method: http.MethodGet, path: "/categories", key: "pet_any"},
		{op: "getUsage", method: http.MethodGet, path: "/usage", key: "pet_any"},
		{op: "getOpenAPIDocument", method: http.MethodGet, path: "/openapi.json"},
		{op: "getOpenAPIDocumentYAML", method: http.MethodGet, path: "/openapi.yaml"},
	} {
		x.want = http.StatusServiceUnavailable
		node503.send(x)
	}
	c.viaPrism += node503.viaPrism
	c.failures = append(c.failures, node503.failures...)
	return nil
}

// freeAddr is a loopback address with a port nothing listens on now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
