package realserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pocketbase/pocketbase/core"

	"petstore/hooks"
	"petstore/internal/pets"
	"petstore/internal/usage"
	"petstore/testkit/contract"
)

// TestSIGTERMLetsRequestsFinish sends SIGTERM while a createPet body is still
// arriving, slowly enough that PocketBase's own 1-second shutdown would cut
// it off: the listener closes at once, the request completes with 201, the
// process exits 0, and the key's usage saved at exit (what its day window
// starts from after a restart) includes it.
func TestSIGTERMLetsRequestsFinish(t *testing.T) {
	dir := t.TempDir()
	key, keyID := createKey(t, dir, "--plan", "free")
	p := start(t, dir)
	const before = 3
	for range before {
		if status, body, err := p.Do(context.Background(), http.MethodGet, "/v1/pets", key, nil); err != nil || status != 200 {
			t.Fatalf("list: %d %v %s", status, err, body)
		}
	}

	body, bodyWriter := io.Pipe()
	req, err := http.NewRequest(http.MethodPost, p.URL+"/v1/pets", body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	// The client sends the body only once the handler asks for it (100
	// Continue), so the first write below returns once the request is in
	// flight in the handler.
	req.Header.Set("Expect", "100-continue")
	client := &http.Client{Transport: contract.NewTransport(t, &http.Transport{ExpectContinueTimeout: time.Minute})}

	type result struct {
		status int
		body   []byte
		err    error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := client.Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		done <- result{resp.StatusCode, data, err}
	}()
	write := func(s string) {
		t.Helper()
		if _, err := bodyWriter.Write([]byte(s)); err != nil {
			t.Fatalf("send body: %v", err)
		}
	}

	write(`{"name": "Slow`)
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitRefused(t, p.Addr)
	// The rest of the body over 2 seconds, twice PocketBase's own bound.
	for _, part := range []string{`poke",`, ` "categoryId"`, `: 7, "status"`, `: "pending"}`} {
		time.Sleep(500 * time.Millisecond)
		write(part)
	}
	bodyWriter.Close()

	r := <-done
	if r.err != nil || r.status != http.StatusCreated {
		t.Fatalf("in-flight create: %d %v %s\nserver output: %s", r.status, r.err, r.body, p.Output())
	}
	var got pets.Pet
	if err := json.Unmarshal(r.body, &got); err != nil || got.Name != "Slowpoke" || got.CategoryID != 7 || got.Status != "pending" {
		t.Fatalf("in-flight create answered %s", r.body)
	}
	code, err := p.Wait(time.Minute)
	if err != nil || code != 0 {
		t.Fatalf("exit status %d, %v; output: %s", code, err, p.Output())
	}

	app := core.NewBaseApp(core.BaseAppConfig{DataDir: dir})
	if err := app.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	defer app.ResetBootstrapState()
	today, err := usage.Saved(app, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if served := today[keyID].Admitted(); served != before+1 {
		t.Fatalf("served today, saved at exit: %d, want %d (the in-flight request included)", served, before+1)
	}
}

// waitRefused returns once a new connection to addr is refused.
func waitRefused(t *testing.T, addr string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			continue
		}
		// Reset: the dial reached the backlog of the listener being closed.
		if errors.Is(err, syscall.ECONNRESET) {
			continue
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("new connection after SIGTERM: %v, want refused", err)
		}
		return
	}
	t.Fatal("new connections are still accepted 30 s after SIGTERM")
}

// TestSIGTERMStopsInTheListedOrder stops the binary with SIGTERM: its debug
// log says "Stopping" of each step and part of ours in the order of
// hooks.StopOrder, leaving out only what this process has nothing of.
func TestSIGTERMStopsInTheListedOrder(t *testing.T) {
	p := start(t, t.TempDir(), "--log-format", "json", "--log-level", "debug", "--metrics-addr", freeAddr(t))
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	var logged []string
	for line := range strings.Lines(p.Output()) {
		var event struct{ Msg, Step, Part string }
		if json.Unmarshal([]byte(line), &event) == nil && event.Msg == "Stopping" {
			logged = append(logged, event.Step+event.Part)
		}
	}
	absent := map[string]bool{
		"cluster handover": true, "cluster node": true, // a cluster node's
		"declared settings": true, "connection bounds": true, "secrets at rest": true, // nothing to stop
		// PocketBase's own, which log nothing of ours.
		"PocketBase's server": true, "PocketBase's log writer": true, "PocketBase's settings watcher": true,
	}
	var want []string
	for _, name := range hooks.StopOrder() {
		if !absent[name] {
			want = append(want, name)
		}
	}
	if !slices.Equal(logged, want) {
		t.Errorf("stopped in the order %q,\nwant %q", logged, want)
	}
}
