package realserver_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"petstore/testkit/realserver"
)

// A leader paused past its lease delivers no webhook when it resumes: its
// copy still holds an event pending and due, which the next leader
// delivered meanwhile, and the resumed node, its fence closed, leases and
// sends nothing before it restarts as a follower. The receiver gets the
// event delivered once.
func TestClusterPausedLeaderSendsNoWebhook(t *testing.T) {
	const ttl = 2 * time.Second
	c := startCluster(t, 3, "--cluster-ttl", ttl.String(), "--webhooks-allow-private")
	key := startLeaderAndFollowers(t, c)
	old := c.nodes[0]
	if _, stderr, err := realserver.Run(bin, old.dir, "superuser", "upsert", "staff@example.com", "a long enough password"); err != nil {
		t.Fatalf("superuser upsert on the leader's --dir: %v\n%s", err, stderr)
	}
	// The receiver fails the first attempts, so that the event is pending
	// and due again later; then it takes every one.
	var failing atomic.Bool
	failing.Store(true)
	var mu sync.Mutex
	var attempts, delivered []string // the webhook-ids
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		attempts = append(attempts, r.Header.Get("Webhook-Id"))
		if failing.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		delivered = append(delivered, r.Header.Get("Webhook-Id"))
	}))
	t.Cleanup(rcv.Close)
	counts := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return len(attempts), len(delivered)
	}

	status, body := send(t, http.MethodPost, old.url()+"/api/collections/_superusers/auth-with-password", "",
		`{"identity":"staff@example.com","password":"a long enough password"}`)
	var auth struct{ Token string }
	if status != http.StatusOK || json.Unmarshal(body, &auth) != nil {
		t.Fatalf("superuser auth: %d %s", status, body)
	}
	status, body = send(t, http.MethodPost, old.url()+"/api/petstore/webhooks", auth.Token,
		`{"url":"`+rcv.URL+`","events":["pet.created"]}`)
	if status != http.StatusCreated {
		t.Fatalf("add endpoint: %d %s", status, body)
	}
	if status, body := send(t, http.MethodPost, old.url()+"/v1/pets", key, `{"name":"hooked","categoryId":1}`); status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, body)
	}
	// The second attempt comes 1.6 to 2.4 s after the first, the third 4 to
	// 6 s after the second: the leader pauses between them, once the
	// second's record has shipped (within a second).
	waitUntil(t, 10*time.Second, "two attempts", func() bool { n, _ := counts(); return n >= 2 })
	time.Sleep(1500 * time.Millisecond)
	if err := old.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	failing.Store(false)
	waitUntil(t, 3*ttl+10*time.Second, "a follower leads", func() bool { return c.nodes[1].leads() || c.nodes[2].leads() })
	waitUntil(t, 20*time.Second, "the next leader delivers the event", func() bool { _, n := counts(); return n >= 1 })
	time.Sleep(time.Until(paused.Add(3 * ttl)))
	if err := old.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 20*time.Second, "the former leader follows", old.follows)
	time.Sleep(time.Second)
	mu.Lock()
	defer mu.Unlock()
	if len(delivered) != 1 {
		t.Errorf("the event was delivered %d times (webhook-ids %s), want once: the resumed former leader sent it again",
			len(delivered), strings.Join(delivered, ", "))
	}
	t.Logf("attempts: %d (webhook-ids %s)", len(attempts), strings.Join(attempts, ", "))
}
