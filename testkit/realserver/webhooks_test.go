package realserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"petstore/internal/pets"
	"petstore/internal/webhooks"
	"petstore/testkit/contract"
	"petstore/testkit/realserver"
)

// delivery is one request a receiver got.
type delivery struct {
	header   http.Header
	body     []byte
	verified error // Standard Webhooks' library's verdict
	matches  error // the document's webhooks' verdict on its body (testkit/contract)
	at       time.Time
}

// receiver is a webhook endpoint on loopback that verifies each delivery
// with Standard Webhooks' Go library, as an integrator's would, and answers
// with the status its answer function gives (200 when nil).
type receiver struct {
	t      *testing.T
	ln     net.Listener
	srv    *http.Server
	doc    *contract.Contract
	secret string
	answer func(n int) int // the status of the n-th delivery (from 1)

	mu    sync.Mutex
	got   []delivery
	event chan struct{}
}

// newReceiver serves on addr ("127.0.0.1:0" for a free port).
func newReceiver(t *testing.T, addr string) *receiver {
	t.Helper()
	r := &receiver{t: t, doc: contract.Load(t), event: make(chan struct{}, 100)}
	r.listen(addr)
	return r
}

func (r *receiver) listen(addr string) {
	r.t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		r.t.Fatal(err)
	}
	r.ln = ln
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	r.t.Cleanup(func() { r.srv.Close() })
}

func (r *receiver) url() string { return "http://" + r.ln.Addr().String() + "/hook" }

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	d := delivery{header: req.Header.Clone(), body: body, at: time.Now(), matches: r.doc.CheckEvent(body)}
	if wh, err := standardwebhooks.NewWebhook(r.secret); err != nil {
		d.verified = err
	} else {
		d.verified = wh.Verify(body, req.Header)
	}
	r.got = append(r.got, d)
	n := len(r.got)
	answer := r.answer
	r.mu.Unlock()
	r.event <- struct{}{} // received, whatever the answer
	status := http.StatusOK
	if answer != nil {
		status = answer(n)
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, "answer %d", n)
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// waitFor waits at most timeout for the receiver to have n deliveries; it
// fails the test for any whose body the document's webhooks do not describe.
func (r *receiver) waitFor(n int, timeout time.Duration) []delivery {
	r.t.Helper()
	deadline := time.After(timeout)
	for {
		if got := r.deliveries(); len(got) >= n {
			for _, d := range got {
				if d.matches != nil {
					r.t.Error(d.matches)
				}
			}
			return got
		}
		select {
		case <-r.event:
		case <-deadline:
			r.t.Fatalf("%d deliveries within %s, want %d", len(r.deliveries()), timeout, n)
		}
	}
}

// webhookStore is a served data directory with a superuser's token and an
// API key.
type webhookStore struct {
	dir, token, key string
	p               *realserver.Process
}

func newWebhookStore(t *testing.T, args ...string) *webhookStore {
	t.Helper()
	s := &webhookStore{dir: t.TempDir()}
	if _, stderr, status := petstore(t, s.dir, "superuser", "upsert", "staff@example.com", "a long enough password"); status != 0 {
		t.Fatalf("superuser upsert: %d %s", status, stderr)
	}
	s.key, _ = createKey(t, s.dir, "--plan", "enterprise")
	s.start(t, args...)
	return s
}

func (s *webhookStore) start(t *testing.T, args ...string) {
	t.Helper()
	s.p = start(t, s.dir, args...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server output:\n%s", s.p.Output())
		}
	})
	status, body, err := s.p.Do(context.Background(), http.MethodPost, "/api/collections/_superusers/auth-with-password", "",
		[]byte(`{"identity":"staff@example.com","password":"a long enough password"}`))
	var auth struct{ Token string }
	if err != nil || status != http.StatusOK || json.Unmarshal(body, &auth) != nil {
		t.Fatalf("superuser auth: %d %v %s", status, err, body)
	}
	s.token = auth.Token
}

// addEndpoint subscribes url to events; it returns the endpoint's id and
// secret.
func (s *webhookStore) addEndpoint(t *testing.T, url string, events ...string) (id, secret string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"url": url, "events": events})
	status, answer, err := s.p.Do(context.Background(), http.MethodPost, "/api/petstore/webhooks", s.token, body)
	var created struct{ ID, Secret string }
	if err != nil || status != http.StatusCreated || json.Unmarshal(answer, &created) != nil || created.Secret == "" {
		t.Fatalf("add endpoint %s: %d %v %s", url, status, err, answer)
	}
	return created.ID, created.Secret
}

func (s *webhookStore) createPet(t *testing.T, name string, header ...string) (pets.Pet, http.Header) {
	t.Helper()
	resp, body, err := s.p.Exchange(context.Background(), http.MethodPost, "/v1/pets", s.key,
		[]byte(fmt.Sprintf(`{"name":%q,"categoryId":7}`, name)), header...)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create %s: %v %v %s", name, resp, err, body)
	}
	var p pets.Pet
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	return p, resp.Header
}

// eventOf decodes a delivery's body.
func eventOf(t *testing.T, d delivery) (typ string, ts time.Time, pet pets.Pet) {
	t.Helper()
	var e struct {
		Type      string
		Timestamp time.Time
		Data      pets.Pet
	}
	if err := json.Unmarshal(d.body, &e); err != nil {
		t.Fatalf("delivery body %s: %v", d.body, err)
	}
	return e.Type, e.Timestamp, e.Data
}

// A /v1 create reaches a subscribed endpoint once, within 10 s, signed so
// that Standard Webhooks' library verifies it, with the created pet as its
// data; replaying its Idempotency-Key delivers nothing more.
func TestWebhookDeliversACreateOnce(t *testing.T) {
	rcv := newReceiver(t, "127.0.0.1:0")
	s := newWebhookStore(t, "--webhooks-allow-private")
	_, rcv.secret = s.addEndpoint(t, rcv.url(), "pet.created")

	created, _ := s.createPet(t, "Webhook Rex <&>", "Idempotency-Key", "hook-once")
	got := rcv.waitFor(1, 10*time.Second)
	d := got[0]
	if d.verified != nil {
		t.Errorf("the receiver's library refuses the signature: %v", d.verified)
	}
	if ct := d.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	typ, ts, pet := eventOf(t, d)
	if typ != "pet.created" || pet != created {
		t.Errorf("event %s %+v, want pet.created %+v", typ, pet, created)
	}
	if time.Since(ts) > time.Minute {
		t.Errorf("timestamp %s", ts)
	}
	var data map[string]json.RawMessage
	_ = json.Unmarshal(d.body, &data)
	if _, err := json.Marshal(data); err != nil || len(data) != 3 {
		t.Errorf("body members %v, want type, timestamp and data", data)
	}

	// The replay answers the same pet, and no event follows it.
	resp, body, err := s.p.Exchange(context.Background(), http.MethodPost, "/v1/pets", s.key,
		[]byte(`{"name":"Webhook Rex <&>","categoryId":7}`), "Idempotency-Key", "hook-once")
	if err != nil || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %v %v %s", resp, err, body)
	}
	time.Sleep(3 * time.Second) // a few of the deliverer's ticks
	if got := rcv.deliveries(); len(got) != 1 {
		t.Fatalf("%d deliveries after the replay, want 1", len(got))
	}

	// The staff see the attempt.
	status, body, err := s.p.Do(context.Background(), http.MethodGet, "/api/petstore/webhooks", s.token, nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("list: %d %v %s", status, err, body)
	}
	var list struct {
		Items []struct {
			ID      string
			Pending int
		}
	}
	if err := json.Unmarshal(body, &list); err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %v %s", err, body)
	}
	status, body, _ = s.p.Do(context.Background(), http.MethodGet, "/api/petstore/webhooks/"+list.Items[0].ID+"/attempts", s.token, nil)
	var attempts struct {
		Items []struct {
			WebhookID string
			Status    int
			Response  string
		}
	}
	if status != http.StatusOK || json.Unmarshal(body, &attempts) != nil || len(attempts.Items) != 1 ||
		attempts.Items[0].Status != 200 || attempts.Items[0].Response != "answer 1" ||
		attempts.Items[0].WebhookID != d.header.Get("webhook-id") {
		t.Errorf("attempts: %d %s", status, body)
	}
}

// An answer of 500 is retried within 10 s with the same webhook-id; the
// metrics count both attempts and the outbox empties.
func TestWebhookRetriesA500(t *testing.T) {
	rcv := newReceiver(t, "127.0.0.1:0")
	rcv.answer = func(n int) int {
		if n == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	}
	metricsAddr := freeAddr(t)
	s := newWebhookStore(t, "--webhooks-allow-private", "--metrics-addr", metricsAddr)
	_, rcv.secret = s.addEndpoint(t, rcv.url(), "pet.created")
	s.createPet(t, "Retried")
	got := rcv.waitFor(2, 12*time.Second)
	if got[1].at.Sub(got[0].at) > 10*time.Second {
		t.Errorf("retried after %s, want within 10 s", got[1].at.Sub(got[0].at))
	}
	if a, b := got[0].header.Get("webhook-id"), got[1].header.Get("webhook-id"); a == "" || a != b {
		t.Errorf("webhook-ids %q and %q, want one", a, b)
	}
	for i, d := range got {
		if d.verified != nil {
			t.Errorf("attempt %d: %v", i+1, d.verified)
		}
	}
	time.Sleep(3 * time.Second)
	if n := len(rcv.deliveries()); n != 2 {
		t.Errorf("%d deliveries, want 2", n)
	}
	families := scrape(t, metricsAddr)
	outcomes := map[string]float64{}
	for _, m := range families["petstore_webhook_deliveries_total"].GetMetric() {
		outcomes[labelsOf(m)] = m.GetCounter().GetValue()
	}
	if outcomes["outcome=delivered"] != 1 || outcomes["outcome=retried"] != 1 || outcomes["outcome=failed"] != 0 {
		t.Errorf("petstore_webhook_deliveries_total %v, want delivered 1 and retried 1", outcomes)
	}
	if h := families["petstore_webhook_delivery_duration_seconds"].GetMetric(); len(h) != 1 || h[0].GetHistogram().GetSampleCount() != 2 {
		t.Errorf("petstore_webhook_delivery_duration_seconds %v, want 2 attempts", h)
	}
	if g := families["petstore_webhook_outbox_pending"].GetMetric(); len(g) != 1 || g[0].GetGauge().GetValue() != 0 {
		t.Errorf("petstore_webhook_outbox_pending %v, want 0", g)
	}
	if out := s.p.Output(); !strings.Contains(out, "Webhooks: a delivery failed") || strings.Contains(out, rcv.secret) {
		t.Errorf("the log should hold the failed attempt, and never the secret:\n%s", out)
	}
}

// An event written while its receiver is down survives a SIGKILL of the
// server: after the restart, it is delivered.
func TestWebhookSurvivesKillWhileReceiverDown(t *testing.T) {
	// The receiver's port, held free.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	s := newWebhookStore(t, "--webhooks-allow-private")
	_, secret := s.addEndpoint(t, "http://"+addr+"/hook", "pet.created")
	created, _ := s.createPet(t, "Survivor")
	time.Sleep(500 * time.Millisecond) // the first attempt finds nobody
	s.p.Kill()

	rcv := newReceiver(t, addr)
	rcv.secret = secret
	s.start(t, "--webhooks-allow-private")
	got := rcv.waitFor(1, 40*time.Second)
	if got[0].verified != nil {
		t.Errorf("signature: %v", got[0].verified)
	}
	if typ, _, pet := eventOf(t, got[0]); typ != "pet.created" || pet != created {
		t.Errorf("event %s %+v, want %+v", typ, pet, created)
	}
}

// Without --webhooks-allow-private, loopback, private, link-local and
// metadata endpoints are refused when they are added (nothing is dialled);
// API keys never reach the staff's webhook routes.
func TestWebhookTargetsAndAccess(t *testing.T) {
	s := newWebhookStore(t)
	ctx := context.Background()
	for _, url := range []string{
		"http://127.0.0.1:9/hook", "http://localhost/hook", "http://[::1]/", "http://10.0.0.8/",
		"http://192.168.0.1/", "http://169.254.169.254/latest/meta-data/", "http://100.64.0.1/",
		"http://metadata.google.internal/", "ftp://127.0.0.1/", "file:///etc/passwd",
	} {
		body, _ := json.Marshal(map[string]any{"url": url, "events": []string{"pet.created"}})
		status, answer, err := s.p.Do(ctx, http.MethodPost, "/api/petstore/webhooks", s.token, body)
		if err != nil || status != http.StatusBadRequest {
			t.Errorf("add %s: %d %v %s, want 400", url, status, err, answer)
		}
	}
	for _, route := range []struct{ method, path string }{
		{http.MethodGet, "/api/petstore/webhooks"},
		{http.MethodPost, "/api/petstore/webhooks"},
		{http.MethodGet, "/api/collections/webhook_endpoints/records"},
	} {
		status, answer, err := s.p.Do(ctx, route.method, route.path, s.key, []byte(`{"url":"https://example.org/","events":["pet.created"]}`))
		if err != nil || (status != http.StatusUnauthorized && status != http.StatusForbidden) {
			t.Errorf("%s %s with an API key: %d %v %s", route.method, route.path, status, err, answer)
		}
	}
}

// Two instances on one data directory send each event once (a lease in
// SQLite), in the order the pets were created, to a slow receiver.
func TestWebhookTwoInstancesSendEachEventOnce(t *testing.T) {
	rcv := newReceiver(t, "127.0.0.1:0")
	rcv.answer = func(int) int {
		time.Sleep(100 * time.Millisecond)
		return http.StatusOK
	}
	s := newWebhookStore(t, "--webhooks-allow-private")
	_, rcv.secret = s.addEndpoint(t, rcv.url(), "pet.created")
	other := start(t, s.dir, "--webhooks-allow-private")

	const n = 12
	var created []pets.Pet
	for i := range n {
		p := s.p
		if i%2 == 1 {
			p = other
		}
		status, body, err := p.Do(context.Background(), http.MethodPost, "/v1/pets", s.key, []byte(fmt.Sprintf(`{"name":"twin %d","categoryId":1}`, i)))
		var pet pets.Pet
		if err != nil || status != http.StatusCreated || json.Unmarshal(body, &pet) != nil {
			t.Fatalf("create %d: %d %v %s", i, status, err, body)
		}
		created = append(created, pet)
	}
	rcv.waitFor(n, 30*time.Second)
	time.Sleep(2 * time.Second) // time for a second send of any event
	got := rcv.deliveries()
	if len(got) != n {
		t.Fatalf("%d deliveries, want %d", len(got), n)
	}
	ids := map[string]bool{}
	for i, d := range got {
		if ids[d.header.Get("webhook-id")] {
			t.Errorf("webhook-id %s delivered twice", d.header.Get("webhook-id"))
		}
		ids[d.header.Get("webhook-id")] = true
		if _, _, pet := eventOf(t, d); pet != created[i] {
			t.Errorf("delivery %d is %+v, want %+v (in order of creation)", i, pet, created[i])
		}
	}
}

// The keys command, a process of its own, writes its key events into the
// outbox in its transaction; the server sends them.
func TestWebhookKeyEventsFromTheCLI(t *testing.T) {
	rcv := newReceiver(t, "127.0.0.1:0")
	s := newWebhookStore(t, "--webhooks-allow-private")
	_, rcv.secret = s.addEndpoint(t, rcv.url(), "key.created", "key.revoked")
	_, id := createKey(t, s.dir, "--plan", "pro", "--name", "from the shell")
	if _, stderr, status := petstore(t, s.dir, "keys", "revoke", id); status != 0 {
		t.Fatalf("keys revoke: %d %s", status, stderr)
	}
	got := rcv.waitFor(2, 10*time.Second)
	for i, want := range []string{"key.created", "key.revoked"} {
		var e struct {
			Type string
			Data map[string]string
		}
		if err := json.Unmarshal(got[i].body, &e); err != nil || e.Type != want || e.Data["id"] != id ||
			e.Data["name"] != "from the shell" || e.Data["plan"] != "pro" || got[i].verified != nil {
			t.Errorf("delivery %d: %s %v %v, want %s", i, got[i].body, err, got[i].verified, want)
		}
	}
}

// SIGTERM during a slow delivery ends the attempt without counting it: the
// server stops at once, and after the restart the event is delivered.
func TestWebhookShutdownDuringADelivery(t *testing.T) {
	release := make(chan struct{})
	rcv := newReceiver(t, "127.0.0.1:0")
	rcv.answer = func(n int) int {
		if n == 1 {
			<-release // the first attempt hangs until the test ends it
		}
		return http.StatusOK
	}
	defer close(release)
	s := newWebhookStore(t, "--webhooks-allow-private")
	_, rcv.secret = s.addEndpoint(t, rcv.url(), "pet.created")
	created, _ := s.createPet(t, "Patient")
	rcv.waitFor(1, 10*time.Second)
	began := time.Now()
	if err := s.p.Stop(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("stopping took %s with a delivery under way", took)
	}
	s.start(t, "--webhooks-allow-private")
	got := rcv.waitFor(2, 40*time.Second)
	if got[0].header.Get("webhook-id") != got[1].header.Get("webhook-id") {
		t.Error("the event was sent again under another webhook-id")
	}
	if _, _, pet := eventOf(t, got[1]); pet != created {
		t.Errorf("delivered %+v, want %+v", pet, created)
	}
	status, body, err := s.p.Do(context.Background(), http.MethodGet, "/api/petstore/webhooks", s.token, nil)
	var list struct{ Items []struct{ ID string } }
	if err != nil || status != http.StatusOK || json.Unmarshal(body, &list) != nil || len(list.Items) != 1 {
		t.Fatalf("list: %d %v %s", status, err, body)
	}
	// The receiver hears of the delivery before the server records it.
	var attempts struct{ Items []struct{ Status int } }
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, body, _ = s.p.Do(context.Background(), http.MethodGet, "/api/petstore/webhooks/"+list.Items[0].ID+"/attempts", s.token, nil)
		if err := json.Unmarshal(body, &attempts); err != nil {
			t.Fatalf("attempts %s: %v", body, err)
		}
		if len(attempts.Items) > 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(attempts.Items) != 1 || attempts.Items[0].Status != 200 {
		t.Errorf("attempts %s, want the one delivery: the stopped one is no attempt", body)
	}
}

// Each kind of event a test can cause here reaches the endpoint as the
// document's webhooks describe it (receiver.waitFor checks every body
// against testkit/contract): a create, a test event, a key's creation, day
// quota (with its usage thresholds: a day quota of 1 crosses both at its one
// request), roll and revocation, a category's creation, rename and deletion,
// and a plan's change in the dashboard.
func TestWebhookEventsMatchTheDocument(t *testing.T) {
	rcv := newReceiver(t, "127.0.0.1:0")
	s := newWebhookStore(t, "--webhooks-allow-private")
	var types []string
	for _, typ := range webhooks.Types {
		types = append(types, string(typ))
	}
	endpoint, secret := s.addEndpoint(t, rcv.url(), types...)
	rcv.secret = secret
	ctx := context.Background()

	s.createPet(t, "Described")
	if status, body, err := s.p.Do(ctx, http.MethodPost, "/api/petstore/webhooks/"+endpoint+"/test", s.token, nil); err != nil || status != http.StatusAccepted {
		t.Fatalf("send a test event: %d %v %s", status, err, body)
	}
	key, id := createKey(t, s.dir, "--plan", "free", "--per-minute", "1", "--per-day", "1")
	if status, body, err := s.p.Do(ctx, http.MethodGet, "/v1/pets?limit=1", key, nil); err != nil || status != http.StatusOK {
		t.Fatalf("the key's one request of the day: %d %v %s", status, err, body)
	}
	for _, command := range [][]string{
		{"keys", "roll", id}, {"keys", "revoke", id},
		{"categories", "create", "--id", "41", "--name", "Lizards"}, {"categories", "rename", "41", "Geckos"}, {"categories", "delete", "41"},
	} {
		if _, stderr, status := petstore(t, s.dir, command...); status != 0 {
			t.Fatalf("%v: %d %s", command, status, stderr)
		}
	}
	status, body, err := s.p.Do(ctx, http.MethodGet, "/api/collections/plans/records?filter=(name='pro')", s.token, nil)
	var plans struct{ Items []struct{ ID string } }
	if err != nil || status != http.StatusOK || json.Unmarshal(body, &plans) != nil || len(plans.Items) != 1 {
		t.Fatalf("pro plan: %d %v %s", status, err, body)
	}
	if status, body, err := s.p.Do(ctx, http.MethodPatch, "/api/collections/plans/records/"+plans.Items[0].ID, s.token, []byte(`{"per_minute":301}`)); err != nil || status != http.StatusOK {
		t.Fatalf("edit the pro plan: %d %v %s", status, err, body)
	}

	want := []string{"pet.created", "webhook.test", "key.created", "key.day_quota_reached", "usage.threshold", "usage.threshold", "key.rolled", "key.revoked",
		"category.created", "category.renamed", "category.deleted", "plan.changed"}
	got := rcv.waitFor(len(want), 20*time.Second)
	seen := map[string]bool{}
	for _, d := range got {
		var e struct{ Type string }
		if err := json.Unmarshal(d.body, &e); err != nil || d.verified != nil {
			t.Errorf("delivery %s: %v, signature %v", d.body, err, d.verified)
		}
		seen[e.Type] = true
	}
	for _, typ := range want {
		if !seen[typ] {
			t.Errorf("no %s among %d deliveries", typ, len(got))
		}
	}
}
