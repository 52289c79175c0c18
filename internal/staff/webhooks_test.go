package staff_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/internal/webhooks"
	"petstore/testkit/apptest"
)

// hookReceiver records what a loopback endpoint receives.
type hookReceiver struct {
	*httptest.Server
	mu  sync.Mutex
	got []hookDelivery
}

type hookDelivery struct {
	header http.Header
	body   []byte
	Type   string          `json:"type"`
	Data   json.RawMessage `json:"data"`
}

func newHookReceiver(t *testing.T) *hookReceiver {
	r := &hookReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		d := hookDelivery{header: req.Header.Clone(), body: body}
		if err := json.Unmarshal(body, &d); err != nil {
			t.Errorf("delivery %s: %v", body, err)
		}
		r.mu.Lock()
		r.got = append(r.got, d)
		r.mu.Unlock()
	}))
	t.Cleanup(r.Close)
	return r
}

// waitFor waits for deliveries of the types, in order, and returns them.
func (r *hookReceiver) waitFor(t *testing.T, types ...string) []hookDelivery {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		got := append([]hookDelivery(nil), r.got...)
		r.mu.Unlock()
		if len(got) >= len(types) {
			for i, want := range types {
				if got[i].Type != want {
					t.Fatalf("delivery %d is %s, want %s (all: %v)", i, got[i].Type, want, typesOf(got))
				}
			}
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries %v, want %v", typesOf(got), types)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func typesOf(ds []hookDelivery) []string {
	var types []string
	for _, d := range ds {
		types = append(types, d.Type)
	}
	return types
}

func startWithWebhooks(t *testing.T) *staffServer {
	s := apptest.StartWith(t, apptest.Config{WebhooksAllowPrivate: true})
	return &staffServer{s, s.SuperuserToken(t, "staff@example.com", "a long enough password")}
}

func (s *staffServer) addEndpoint(t *testing.T, url string, events ...string) (id, secret string) {
	t.Helper()
	r := s.Do(t, http.MethodPost, "/api/petstore/webhooks", s.token, map[string]any{"url": url, "events": events})
	var created struct{ ID, Secret string }
	if r.StatusCode != http.StatusCreated || json.Unmarshal(r.Body, &created) != nil {
		t.Fatalf("add endpoint: %d %s", r.StatusCode, r.Body)
	}
	return created.ID, created.Secret
}

// Key changes made through the staff API, and a pet made through the
// records API (as the dashboard does), are delivered; a key's data is its
// id, name, plan and state, never the key.
func TestWebhookEventsOfKeysAndRecords(t *testing.T) {
	s := startWithWebhooks(t)
	rcv := newHookReceiver(t)
	s.addEndpoint(t, rcv.URL, "key.created", "key.rolled", "key.revoked", "pet.created")

	r := s.Do(t, http.MethodPost, "/api/petstore/keys", s.token, map[string]any{"plan": "free", "name": "hooked"})
	var k key
	if r.StatusCode != http.StatusCreated || json.Unmarshal(r.Body, &k) != nil {
		t.Fatalf("create key: %d %s", r.StatusCode, r.Body)
	}
	if r := s.Do(t, http.MethodPost, "/api/petstore/keys/"+k.ID+"/roll", s.token, map[string]any{"graceSeconds": 0}); r.StatusCode != http.StatusCreated {
		t.Fatalf("roll: %d %s", r.StatusCode, r.Body)
	}
	if r := s.Do(t, http.MethodPost, "/api/petstore/keys/"+k.ID+"/revoke", s.token, nil); r.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %d %s", r.StatusCode, r.Body)
	}
	if r := s.Do(t, http.MethodPost, "/api/collections/pets/records", s.token, map[string]any{"name": "Dashboard Dog", "categoryId": 3}); r.StatusCode != http.StatusOK {
		t.Fatalf("records API create: %d %s", r.StatusCode, r.Body)
	}
	got := rcv.waitFor(t, "key.created", "key.rolled", "key.revoked", "pet.created")
	for i, state := range []string{"active", "active", "revoked"} {
		var data map[string]any
		_ = json.Unmarshal(got[i].Data, &data)
		if data["id"] != k.ID || data["name"] != "hooked" || data["plan"] != "free" || data["state"] != state || len(data) != 4 {
			t.Errorf("%s data %s", got[i].Type, got[i].Data)
		}
		if strings.Contains(string(got[i].body), k.Key) || strings.Contains(string(got[i].body), k.Prefix) {
			t.Errorf("%s carries the key: %s", got[i].Type, got[i].body)
		}
	}
	var pet struct {
		ID         int64
		Name       string
		CategoryID int64
		Status     string
	}
	if err := json.Unmarshal(got[3].Data, &pet); err != nil || pet.Name != "Dashboard Dog" || pet.CategoryID != 3 || pet.Status != "available" || pet.ID == 0 {
		t.Errorf("pet.created data %s", got[3].Data)
	}
}

// With no endpoint subscribed to an event's type, nothing is written; a
// paused endpoint gets nothing; one subscribed to other types neither.
func TestWebhookOutboxOnlyForSubscribers(t *testing.T) {
	s := startWithWebhooks(t)
	key := s.NewKey(t, apikeys.NewKey{Name: "hooks", Plan: "enterprise"})
	s.CreatePet(t, key, map[string]any{"name": "Nobody listens", "categoryId": 1})
	if n := s.CountRecords(t, webhooks.EventsCollection); n != 0 {
		t.Fatalf("%d events without endpoints", n)
	}
	rcv := newHookReceiver(t)
	id, _ := s.addEndpoint(t, rcv.URL, "key.banned")
	s.CreatePet(t, key, map[string]any{"name": "Not subscribed", "categoryId": 1})
	if n := s.CountRecords(t, webhooks.EventsCollection); n != 0 {
		t.Fatalf("%d events for an endpoint of other types", n)
	}
	if r := s.Do(t, http.MethodPatch, "/api/petstore/webhooks/"+id, s.token, map[string]any{"events": []string{"pet.created"}, "paused": true}); r.StatusCode != http.StatusOK {
		t.Fatalf("pause: %d %s", r.StatusCode, r.Body)
	}
	s.CreatePet(t, key, map[string]any{"name": "Paused", "categoryId": 1})
	if n := s.CountRecords(t, webhooks.EventsCollection); n != 0 {
		t.Fatalf("%d events for a paused endpoint", n)
	}
	if r := s.Do(t, http.MethodPatch, "/api/petstore/webhooks/"+id, s.token, map[string]any{"paused": false}); r.StatusCode != http.StatusOK {
		t.Fatalf("resume: %d %s", r.StatusCode, r.Body)
	}
	s.CreatePet(t, key, map[string]any{"name": "Heard", "categoryId": 1})
	rcv.waitFor(t, "pet.created")
}

// A rolled secret signs beside the new one during its grace; staff's test
// event and resend reach the endpoint; deleting the endpoint deletes its
// events and attempts; unknown ids are 404; bad input is 400.
func TestWebhookStaffRoutes(t *testing.T) {
	s := startWithWebhooks(t)
	rcv := newHookReceiver(t)
	id, first := s.addEndpoint(t, rcv.URL, "pet.created")

	r := s.Do(t, http.MethodPost, "/api/petstore/webhooks/"+id+"/roll", s.token, map[string]any{"graceSeconds": 3600})
	var rolled struct{ ID, Secret string }
	if r.StatusCode != http.StatusOK || json.Unmarshal(r.Body, &rolled) != nil || rolled.Secret == first || !strings.HasPrefix(rolled.Secret, "whsec_") {
		t.Fatalf("roll: %d %s", r.StatusCode, r.Body)
	}
	if r := s.Do(t, http.MethodPost, "/api/petstore/webhooks/"+id+"/test", s.token, nil); r.StatusCode != http.StatusAccepted {
		t.Fatalf("test: %d %s", r.StatusCode, r.Body)
	}
	got := rcv.waitFor(t, string(webhooks.TestEvent))
	if sigs := strings.Split(got[0].header.Get("webhook-signature"), " "); len(sigs) != 2 {
		t.Errorf("signatures during the grace: %q", sigs)
	}
	for _, secret := range []string{first, rolled.Secret} {
		wh, _ := standardwebhooks.NewWebhook(secret)
		if err := wh.Verify(got[0].body, got[0].header); err != nil {
			t.Errorf("verify: %v", err)
		}
	}

	// A failed event, resent, is delivered with its webhook-id.
	waitRecordedDelivered(t, s, 1)
	if _, err := s.App.DB().NewQuery("UPDATE webhook_events SET status = 'failed', attempts = 9").Execute(); err != nil {
		t.Fatal(err)
	}
	var event struct{ ID string }
	if err := s.App.DB().NewQuery("SELECT id FROM webhook_events").One(&event); err != nil {
		t.Fatal(err)
	}
	if r := s.Do(t, http.MethodPost, "/api/petstore/webhooks/"+id+"/events/"+event.ID+"/resend", s.token, nil); r.StatusCode != http.StatusAccepted {
		t.Fatalf("resend: %d %s", r.StatusCode, r.Body)
	}
	got = rcv.waitFor(t, string(webhooks.TestEvent), string(webhooks.TestEvent))
	if got[0].header.Get("webhook-id") != got[1].header.Get("webhook-id") {
		t.Error("the resent event has another webhook-id")
	}
	if r := s.Do(t, http.MethodPost, "/api/petstore/webhooks/"+id+"/events/"+event.ID+"/resend", s.token, nil); r.StatusCode != http.StatusNotFound {
		t.Errorf("resend of a delivered event: %d %s", r.StatusCode, r.Body)
	}

	// A roll's grace keeps the keys' rule: 30 days at most, a day when not
	// sent.
	r = s.Do(t, http.MethodPost, "/api/petstore/webhooks/"+id+"/roll", s.token, map[string]any{"graceSeconds": 2592001})
	var refused struct {
		Message string
		Data    map[string]struct{ Code, Message string }
	}
	if r.StatusCode != http.StatusBadRequest || json.Unmarshal(r.Body, &refused) != nil ||
		refused.Message != "The grace period must be from 0 to 30 days (2592000 seconds)." ||
		refused.Data["graceSeconds"].Code != "validation_out_of_range" || refused.Data["graceSeconds"].Message != refused.Message {
		t.Errorf("roll with a grace beyond 30 days: %d %s", r.StatusCode, r.Body)
	}
	for _, body := range []map[string]any{{"graceSeconds": 2592000}, {}} {
		if r := s.Do(t, http.MethodPost, "/api/petstore/webhooks/"+id+"/roll", s.token, body); r.StatusCode != http.StatusOK {
			t.Errorf("roll with %v: %d %s", body, r.StatusCode, r.Body)
		}
	}
	var rolledEndpoint webhooks.Endpoint
	s.Do(t, http.MethodGet, "/api/petstore/webhooks/"+id, s.token, nil).JSON(t, &rolledEndpoint)
	if until, err := time.Parse(time.RFC3339, rolledEndpoint.PreviousUntil); err != nil ||
		time.Until(until) < 23*time.Hour+59*time.Minute || time.Until(until) > 24*time.Hour {
		t.Errorf("after a roll without graceSeconds, the previous secret signs until %q, want a day from now", rolledEndpoint.PreviousUntil)
	}

	// The list never shows a secret.
	r = s.Do(t, http.MethodGet, "/api/petstore/webhooks", s.token, nil)
	if r.StatusCode != http.StatusOK || strings.Contains(string(r.Body), "whsec_") {
		t.Errorf("list: %d %s", r.StatusCode, r.Body)
	}
	r = s.Do(t, http.MethodGet, "/api/collections/webhook_endpoints/records", s.token, nil)
	if r.StatusCode != http.StatusOK || strings.Contains(string(r.Body), "whsec_") {
		t.Errorf("records API: %d %s", r.StatusCode, r.Body)
	}

	for _, bad := range []map[string]any{
		{"url": "gopher://x", "events": []string{"pet.created"}},
		{"url": rcv.URL, "events": []string{"pet.eaten"}},
		{"url": rcv.URL, "events": []string{}},
		{"url": rcv.URL},
	} {
		if r := s.Do(t, http.MethodPost, "/api/petstore/webhooks", s.token, bad); r.StatusCode != http.StatusBadRequest {
			t.Errorf("add %v: %d %s", bad, r.StatusCode, r.Body)
		}
	}
	if r := s.Do(t, http.MethodPost, "/api/collections/webhook_endpoints/records", s.token, map[string]any{"url": "http://10.0.0.1/", "secret": "x"}); r.StatusCode != http.StatusForbidden {
		t.Errorf("records API create: %d %s", r.StatusCode, r.Body)
	}
	for _, path := range []string{"/api/petstore/webhooks/nope", "/api/petstore/webhooks/nope/attempts"} {
		if r := s.Do(t, http.MethodGet, path, s.token, nil); r.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d %s", path, r.StatusCode, r.Body)
		}
	}
	if r := s.Do(t, http.MethodDelete, "/api/petstore/webhooks/"+id, s.token, nil); r.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.StatusCode, r.Body)
	}
	for _, c := range []string{webhooks.EventsCollection, webhooks.AttemptsCollection, webhooks.EndpointsCollection} {
		if n := s.CountRecords(t, c); n != 0 {
			t.Errorf("%d records of %s after the endpoint's deletion", n, c)
		}
	}
}

// A key that uses up its day's quota is told of once, however many requests
// it sends after.
func TestWebhookDayQuotaReachedOnce(t *testing.T) {
	apptest.Slow(t)
	s := startWithWebhooks(t)
	rcv := newHookReceiver(t)
	s.addEndpoint(t, rcv.URL, "key.day_quota_reached")
	key := s.NewKey(t, apikeys.NewKey{Name: "thrifty", Plan: "free", PerDay: 3})
	for range 6 {
		s.Do(t, http.MethodGet, "/v1/pets", key, nil)
	}
	got := rcv.waitFor(t, "key.day_quota_reached")
	var data map[string]any
	_ = json.Unmarshal(got[0].Data, &data)
	if data["name"] != "thrifty" || data["plan"] != "free" {
		t.Errorf("data %s", got[0].Data)
	}
	time.Sleep(1500 * time.Millisecond)
	rcv.mu.Lock()
	n := len(rcv.got)
	rcv.mu.Unlock()
	if n != 1 {
		t.Errorf("%d deliveries, want 1", n)
	}
	if c := s.CountRecords(t, webhooks.EventsCollection); c != 1 {
		t.Errorf("%d events, want 1", c)
	}
}

// An endpoint that has failed every attempt for five days is paused with
// its reason, which staff see, and audited as the system's.
func TestWebhookEndpointPausedAfterFiveDaysOfFailures(t *testing.T) {
	s := startWithWebhooks(t)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer failing.Close()
	id, _ := s.addEndpoint(t, failing.URL, "pet.created")
	sixDaysAgo := time.Now().Add(-6 * 24 * time.Hour).UTC().Format("2006-01-02 15:04:05.000Z")
	if _, err := s.App.DB().NewQuery("UPDATE webhook_endpoints SET failing_since = {:t}").Bind(map[string]any{"t": sixDaysAgo}).Execute(); err != nil {
		t.Fatal(err)
	}
	if r := s.Do(t, http.MethodPost, "/api/petstore/webhooks/"+id+"/test", s.token, nil); r.StatusCode != http.StatusAccepted {
		t.Fatalf("test: %d %s", r.StatusCode, r.Body)
	}
	deadline := time.Now().Add(10 * time.Second)
	var ep webhooks.Endpoint
	for time.Now().Before(deadline) {
		r := s.Do(t, http.MethodGet, "/api/petstore/webhooks/"+id, s.token, nil)
		if err := json.Unmarshal(r.Body, &ep); err != nil {
			t.Fatal(err)
		}
		if ep.Paused {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !ep.Paused || !strings.Contains(ep.PausedReason, "every delivery failed since") || ep.FailingSince == "" {
		t.Fatalf("endpoint %+v, want paused with its reason", ep)
	}
	// Audited as the service's, once, with the reason.
	rows := auditRowsWhere(t, s, audit.WebhookField, id)
	if len(rows) != 3 || rows[2].Action != string(audit.WebhookPaused) || rows[2].Actor != audit.ActorSystem ||
		rows[2].ActorEmail != "" || rows[2].Address != "" ||
		rows[2].Details != `{"failing_since":"`+ep.FailingSince+`","reason":"`+ep.PausedReason+`"}` {
		t.Errorf("audit records %+v, want webhook.created, webhook.test_sent and webhook.paused by system with the reason", rows)
	}
	r := s.Do(t, http.MethodGet, "/api/petstore/webhooks/"+id+"/attempts", s.token, nil)
	var attempts struct{ Items []webhooks.Attempt }
	if json.Unmarshal(r.Body, &attempts) != nil || len(attempts.Items) != 1 || attempts.Items[0].Status != 503 || attempts.Items[0].EventStatus != "pending" {
		t.Errorf("attempts %s", r.Body)
	}
}

// The limiter's ban, saved through its ledger, is a key.banned event whose
// state is banned.
func TestWebhookKeyBanned(t *testing.T) {
	s := startWithWebhooks(t)
	rcv := newHookReceiver(t)
	s.addEndpoint(t, rcv.URL, "key.banned")
	key := s.NewKey(t, apikeys.NewKey{Name: "noisy", Plan: "free"})
	id := s.KeyRecord(t, key).Id
	if err := apikeys.SaveBan(s.App, id, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	got := rcv.waitFor(t, "key.banned")
	var data map[string]any
	if err := json.Unmarshal(got[0].Data, &data); err != nil || data["id"] != id || data["state"] != "banned" {
		t.Errorf("data %s", got[0].Data)
	}
}

// The history keeps each failed attempt, and the deliveries of a batch as
// one record: the last event's, with how many were delivered in a row.
// Events created while the first one waits for its retry go with it, in
// order, in one batch.
func TestWebhookHistoryOfABatch(t *testing.T) {
	apptest.Slow(t)
	s := startWithWebhooks(t)
	rcv := newHookReceiver(t)
	var calls sync.Mutex
	failed := false
	answer := rcv.Config.Handler
	rcv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		calls.Lock()
		first := !failed
		failed = true
		calls.Unlock()
		if first {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		answer.ServeHTTP(w, req)
		_, _ = io.WriteString(w, "thanks")
	})
	id, _ := s.addEndpoint(t, rcv.URL, "pet.created")
	key := s.NewKey(t, apikeys.NewKey{Name: "hooks", Plan: "enterprise"})
	s.CreatePet(t, key, map[string]any{"name": "First", "categoryId": 1})
	deadline := time.Now().Add(10 * time.Second)
	for s.CountRecords(t, webhooks.AttemptsCollection) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	for _, name := range []string{"Second", "Third"} {
		s.CreatePet(t, key, map[string]any{"name": name, "categoryId": 1})
	}
	got := rcv.waitFor(t, "pet.created", "pet.created", "pet.created")
	var names []string
	for _, d := range got {
		var pet struct{ Name string }
		_ = json.Unmarshal(d.Data, &pet)
		names = append(names, pet.Name)
	}
	if strings.Join(names, ",") != "First,Second,Third" {
		t.Errorf("delivered %v after the retry, want First, Second, Third", names)
	}
	var attempts struct{ Items []webhooks.Attempt }
	for deadline := time.Now().Add(5 * time.Second); ; {
		r := s.Do(t, http.MethodGet, "/api/petstore/webhooks/"+id+"/attempts", s.token, nil)
		if err := json.Unmarshal(r.Body, &attempts); err != nil {
			t.Fatal(err)
		}
		if len(attempts.Items) == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(attempts.Items) != 2 {
		t.Fatalf("history %+v, want the delivered batch and the failed attempt", attempts.Items)
	}
	batch, failure := attempts.Items[0], attempts.Items[1]
	if batch.Events != 3 || batch.Status != 200 || batch.Response != "thanks" || batch.EventStatus != "delivered" ||
		batch.WebhookID != got[2].header.Get("webhook-id") {
		t.Errorf("the batch's record %+v, want 3 events, the last one's", batch)
	}
	if failure.Events != 1 || failure.Status != 500 || failure.WebhookID != got[0].header.Get("webhook-id") {
		t.Errorf("the failure's record %+v", failure)
	}
}

// waitRecordedDelivered waits until n events are recorded as delivered. A
// receiver hears of a delivery before the deliverer records it: a test that
// fails an event by hand does so once it is recorded, or the record would
// undo it.
func waitRecordedDelivered(t *testing.T, s *staffServer, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		var delivered int
		if err := s.App.DB().NewQuery("SELECT COUNT(*) FROM webhook_events WHERE status = 'delivered'").Row(&delivered); err != nil {
			t.Fatal(err)
		}
		if delivered == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events recorded as delivered, want %d", delivered, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitPaused waits until the endpoint is paused and returns it.
func waitPaused(t *testing.T, s *staffServer, id string) webhooks.Endpoint {
	t.Helper()
	var ep webhooks.Endpoint
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		r := s.Do(t, http.MethodGet, "/api/petstore/webhooks/"+id, s.token, nil)
		if err := json.Unmarshal(r.Body, &ep); err != nil {
			t.Fatal(err)
		}
		if ep.Paused {
			return ep
		}
	}
	t.Fatalf("endpoint %+v, want it paused", ep)
	return ep
}

// A receiver's 410 Gone asks for no more deliveries, as Standard Webhooks
// and Svix read it: the event is failed at once, not retried, and the
// endpoint is paused with the reason, which staff see; the pause is
// audited as the system's and logged. Resuming it sends the events that
// waited.
func TestWebhookGoneStopsAndPauses(t *testing.T) {
	s := startWithWebhooks(t)
	var requests atomic.Int64
	gone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		requests.Add(1)
		w.WriteHeader(http.StatusGone)
	}))
	defer gone.Close()
	id, _ := s.addEndpoint(t, gone.URL, "pet.created")
	if r := s.Do(t, http.MethodPost, "/api/petstore/webhooks/"+id+"/test", s.token, nil); r.StatusCode != http.StatusAccepted {
		t.Fatalf("test: %d %s", r.StatusCode, r.Body)
	}
	ep := waitPaused(t, s, id)
	if !strings.Contains(ep.PausedReason, "the endpoint answered 410 Gone") || ep.FailingSince == "" {
		t.Errorf("endpoint %+v, want paused for the 410", ep)
	}
	key := s.NewKey(t, apikeys.NewKey{Name: "hooks", Plan: "enterprise"})
	s.CreatePet(t, key, map[string]any{"name": "Unheard", "categoryId": 1})
	time.Sleep(3 * time.Second) // past the first retry's 2 s, give or take a fifth
	if n := requests.Load(); n != 1 {
		t.Errorf("the receiver got %d requests, want 1: a 410 is not retried, a paused endpoint gets nothing", n)
	}
	var test struct {
		Status   string `db:"status"`
		Attempts int    `db:"attempts"`
	}
	if err := s.App.DB().NewQuery("SELECT status, attempts FROM webhook_events WHERE type = 'webhook.test'").One(&test); err != nil ||
		test.Status != "failed" || test.Attempts != 1 {
		t.Errorf("the test event %+v (%v), want failed after one attempt", test, err)
	}
	rows := auditRowsWhere(t, s, audit.WebhookField, id)
	if len(rows) != 3 || rows[2].Action != string(audit.WebhookPaused) || rows[2].Actor != audit.ActorSystem ||
		rows[2].Details != `{"failing_since":"`+ep.FailingSince+`","reason":"`+ep.PausedReason+`"}` {
		t.Errorf("audit records %+v, want webhook.paused by system with the reason", rows)
	}
	r := s.Do(t, http.MethodGet, "/api/petstore/webhooks/"+id+"/attempts", s.token, nil)
	var attempts struct{ Items []webhooks.Attempt }
	if json.Unmarshal(r.Body, &attempts) != nil || len(attempts.Items) != 1 || attempts.Items[0].Status != http.StatusGone ||
		attempts.Items[0].EventStatus != "failed" {
		t.Errorf("attempts %s", r.Body)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var n int
		if err := s.App.AuxDB().NewQuery("SELECT COUNT(*) FROM _logs WHERE message = 'Webhooks: an endpoint is paused'" +
			" AND json_extract(data, '$.endpoint') = {:id}").Bind(map[string]any{"id": id}).Row(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d log lines of the pause, want 1", n)
		}
	}
}

// A receiver that answers "HTTP/1.1 200 OK" and an endless header line
// fails the attempt, whose history says why; the event is retried.
func TestWebhookEndlessHeaderFailsTheAttempt(t *testing.T) {
	s := startWithWebhooks(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nX-Endless: ")
				chunk := []byte(strings.Repeat("a", 64<<10))
				for range 1 << 14 { // 1 GiB at most
					if _, err := conn.Write(chunk); err != nil {
						return
					}
				}
			}()
		}
	}()
	id, _ := s.addEndpoint(t, "http://"+ln.Addr().String()+"/hook", "pet.created")
	if r := s.Do(t, http.MethodPost, "/api/petstore/webhooks/"+id+"/test", s.token, nil); r.StatusCode != http.StatusAccepted {
		t.Fatalf("test: %d %s", r.StatusCode, r.Body)
	}
	var attempts struct{ Items []webhooks.Attempt }
	for deadline := time.Now().Add(10 * time.Second); len(attempts.Items) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no attempt recorded")
		}
		r := s.Do(t, http.MethodGet, "/api/petstore/webhooks/"+id+"/attempts", s.token, nil)
		if err := json.Unmarshal(r.Body, &attempts); err != nil {
			t.Fatal(err)
		}
	}
	a := attempts.Items[0]
	if a.Status != 0 || a.Error != "the answer's status line and headers are longer than 64 KiB" || a.EventStatus != "pending" {
		t.Errorf("attempt %+v, want no status, the head's limit as the error, the event pending", a)
	}
}

// An endpoint URL's mistakes read as sentences, with the member named; the
// guard refuses an IPv4 loopback written as IPv6 (translated) when an
// endpoint is created on a server without --webhooks-allow-private.
func TestWebhookURLErrorsReadAsSentences(t *testing.T) {
	s := start(t)
	for _, tc := range []struct {
		body map[string]any
		msg  string
	}{
		{map[string]any{"url": "http://[::ffff:0:127.0.0.1]:8080/hook", "events": []string{"pet.created"}},
			"The URL's host is, or resolves to, a loopback, private, link-local, CGNAT, metadata, documentation or reserved address, " +
				"or this host's own: for a receiver on this machine or its network, start serve with --webhooks-allow-private."},
		{map[string]any{"url": "http://[::127.0.0.1]/", "events": []string{"pet.created"}}, "The URL's host is, or resolves to,"},
		{map[string]any{"url": "http://192.0.2.10/", "events": []string{"pet.created"}}, "The URL's host is, or resolves to,"},
		{map[string]any{"url": "gopher://93.184.215.14/", "events": []string{"pet.created"}}, "The URL's scheme must be http or https."},
		{map[string]any{"events": []string{"pet.created"}}, "A url is required: the endpoint's http or https URL."},
		{map[string]any{"url": "https://93.184.215.14/" + strings.Repeat("a", 2048), "events": []string{"pet.created"}}, "The url is longer than 2048 characters."},
		{map[string]any{"url": "https://93.184.215.14/", "events": []string{}}, "At least one event type is required in events: pet.created,"},
		{map[string]any{"url": "https://93.184.215.14/", "events": []string{"pet.eaten"}}, `"pet.eaten" in events is no event type; the types are pet.created,`},
		{map[string]any{"url": "https://93.184.215.14/", "events": []string{"pet.created"}, "description": strings.Repeat("d", 201)},
			"The description is longer than 200 characters."},
		{map[string]any{"url": "https://93.184.215.14/", "events": []string{"pet.created"}, "description": "shop\x1b[2J"},
			"The description holds U+001B, a control, format or invisible character."},
		{map[string]any{"url": "https://93.184.215.14/", "events": []string{"pet.created"}, "description": "line\nbreak"},
			"The description holds U+000A"},
		{map[string]any{"url": "https://93.184.215.14/", "events": []string{"pet.created"}, "description": "nul\x00"},
			"The description holds U+0000"},
		{map[string]any{"url": "https://93.184.215.14/", "events": []string{"pet.created"}, "description": "exe.\u202egnp"},
			"The description holds U+202E"},
	} {
		r := s.Do(t, http.MethodPost, "/api/petstore/webhooks", s.token, tc.body)
		var body struct {
			Message string
			Data    map[string]struct{ Code, Message string }
		}
		if r.StatusCode != http.StatusBadRequest || json.Unmarshal(r.Body, &body) != nil || !strings.HasPrefix(body.Message, tc.msg) {
			t.Errorf("%v: %d %s, want 400 %q", tc.body, r.StatusCode, r.Body, tc.msg)
			continue
		}
		for member, e := range body.Data {
			if e.Message != body.Message || !strings.HasPrefix(e.Code, "validation_invalid_") || !strings.Contains(body.Message, member) &&
				!strings.Contains(body.Message, "URL") {
				t.Errorf("%v: member %s %+v, message %q", tc.body, member, e, body.Message)
			}
		}
	}
	if n := s.CountRecords(t, webhooks.EndpointsCollection); n != 0 {
		t.Errorf("%d endpoints created", n)
	}
}

// One endpoint's pending and failed counts are the list's, in its GET and
// in a PATCH's answer.
func TestWebhookOneEndpointsCountsAsInTheList(t *testing.T) {
	s := startWithWebhooks(t)
	r := s.Do(t, http.MethodPost, "/api/petstore/webhooks", s.token,
		map[string]any{"url": "http://127.0.0.1:9/hook", "events": []string{"pet.created"}, "paused": true})
	var created struct{ ID string }
	if r.StatusCode != http.StatusCreated || json.Unmarshal(r.Body, &created) != nil {
		t.Fatalf("add: %d %s", r.StatusCode, r.Body)
	}
	id := created.ID
	for range 3 { // paused: they wait, as written
		if r := s.Do(t, http.MethodPost, "/api/petstore/webhooks/"+id+"/test", s.token, nil); r.StatusCode != http.StatusAccepted {
			t.Fatalf("test: %d %s", r.StatusCode, r.Body)
		}
	}
	if _, err := s.App.DB().NewQuery("UPDATE webhook_events SET status = 'failed' WHERE rowid = (SELECT MIN(rowid) FROM webhook_events)").Execute(); err != nil {
		t.Fatal(err)
	}
	var list struct{ Items []webhooks.Endpoint }
	s.Do(t, http.MethodGet, "/api/petstore/webhooks", s.token, nil).JSON(t, &list)
	if len(list.Items) != 1 || list.Items[0].Pending != 2 || list.Items[0].Failed != 1 {
		t.Fatalf("list %+v, want 2 pending and 1 failed", list.Items)
	}
	var one, patched webhooks.Endpoint
	s.Do(t, http.MethodGet, "/api/petstore/webhooks/"+id, s.token, nil).JSON(t, &one)
	s.Do(t, http.MethodPatch, "/api/petstore/webhooks/"+id, s.token, map[string]any{"description": "counted"}).JSON(t, &patched)
	for name, ep := range map[string]webhooks.Endpoint{"GET": one, "PATCH": patched} {
		if ep.Pending != 2 || ep.Failed != 1 {
			t.Errorf("%s: pending %d, failed %d, want the list's 2 and 1", name, ep.Pending, ep.Failed)
		}
	}
}

// URLs and descriptions made of characters that JSON escapes ("&", "<")
// and long values are audited within the details' limit, not refused with
// a 500: an endpoint with 800 "&" is created, one with 500 "&" and a
// description of 200 "<" is deleted, a change between two 2,000-character
// URLs is recorded with both cut.
func TestWebhookAuditOfLongValues(t *testing.T) {
	s := startWithWebhooks(t)
	rcv := newHookReceiver(t)
	id, _ := s.addEndpoint(t, rcv.URL+"/?"+strings.Repeat("&", 800), "pet.created")
	r := s.Do(t, http.MethodPost, "/api/petstore/webhooks", s.token, map[string]any{
		"url": rcv.URL + "/?" + strings.Repeat("&", 500), "events": []string{"pet.created"}, "description": strings.Repeat("<", 200)})
	var second struct{ ID string }
	if r.StatusCode != http.StatusCreated || json.Unmarshal(r.Body, &second) != nil {
		t.Fatalf("add: %d %s", r.StatusCode, r.Body)
	}
	if r := s.Do(t, http.MethodDelete, "/api/petstore/webhooks/"+second.ID, s.token, nil); r.StatusCode != http.StatusNoContent {
		t.Errorf("delete: %d %s", r.StatusCode, r.Body)
	}
	long := func(c string) string { return rcv.URL + "/" + strings.Repeat(c, 2000-len(rcv.URL)) }
	for _, u := range []string{long("a"), long("b")} {
		if r := s.Do(t, http.MethodPatch, "/api/petstore/webhooks/"+id, s.token, map[string]any{"url": u, "description": u[:200]}); r.StatusCode != http.StatusOK {
			t.Fatalf("change: %d %s", r.StatusCode, r.Body)
		}
	}
	rows := auditRowsWhere(t, s, audit.WebhookField, id)
	if len(rows) != 3 {
		t.Fatalf("%d audit records, want created and two changes", len(rows))
	}
	var change struct{ URL, Description struct{ Old, New string } }
	if err := json.Unmarshal([]byte(rows[2].Details), &change); err != nil || len(rows[2].Details) > 4096 ||
		!strings.HasSuffix(change.URL.Old, " bytes cut]") || !strings.HasPrefix(change.URL.New, long("b")[:1000]) ||
		change.Description.New != long("b")[:200] {
		t.Errorf("the change's details (%d bytes): %.300s…", len(rows[2].Details), rows[2].Details)
	}
	if deleted := auditRowsWhere(t, s, audit.WebhookField, second.ID); len(deleted) != 2 ||
		!strings.Contains(deleted[1].Details, strings.Repeat("<", 200)) || !strings.Contains(deleted[1].Details, strings.Repeat("&", 500)) {
		t.Errorf("the deletion's records %+v", deleted)
	}
}

// A plan's change in the dashboard is a plan.changed event: the plan as it
// is now and what changed, old and new.
func TestWebhookPlanChanged(t *testing.T) {
	s := startWithWebhooks(t)
	rcv := newHookReceiver(t)
	s.addEndpoint(t, rcv.URL, "plan.changed")
	plan := planID(t, s, "free")
	if r := s.Do(t, http.MethodPatch, "/api/collections/plans/records/"+plan, s.token, map[string]any{"per_minute": 1000000, "per_day": 1000000000}); r.StatusCode != http.StatusOK {
		t.Fatalf("the plan's change: %d %s", r.StatusCode, r.Body)
	}
	got := rcv.waitFor(t, "plan.changed")
	var data struct {
		ID, Name  string
		PerMinute int64
		Changes   map[string]struct{ Old, New string }
	}
	if err := json.Unmarshal(got[0].Data, &data); err != nil {
		t.Fatal(err)
	}
	if data.ID != plan || data.Name != "free" || data.PerMinute != 1000000 || data.Changes["per_minute"].New != "1000000" || data.Changes["per_minute"].Old == "" {
		t.Errorf("data %s", got[0].Data)
	}
}

// A node that may not write (a cluster node whose fence has closed) sends
// no webhook and records nothing of one: its event stays pending, not
// leased, without an attempt, for the node that may write next; once this
// one may write again, it delivers the event and records the attempt.
func TestWebhookNothingSentOrRecordedWhileTheNodeMayNotWrite(t *testing.T) {
	var mayWrite atomic.Bool
	mayWrite.Store(true)
	app := apptest.StartWith(t, apptest.Config{WebhooksAllowPrivate: true, MayWrite: mayWrite.Load})
	s := &staffServer{app, app.SuperuserToken(t, "staff@example.com", "a long enough password")}
	rcv := newHookReceiver(t)
	s.addEndpoint(t, rcv.URL, "key.created")

	mayWrite.Store(false)
	// The request itself is not fenced here (no cluster): its event is
	// written in its transaction, and waits in the outbox.
	r := s.Do(t, http.MethodPost, "/api/petstore/keys", s.token, map[string]any{"plan": "free", "name": "fenced"})
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("create key: %d %s", r.StatusCode, r.Body)
	}
	time.Sleep(2500 * time.Millisecond) // the deliverer looks every second, and at each commit
	rcv.mu.Lock()
	sent := len(rcv.got)
	rcv.mu.Unlock()
	if sent != 0 {
		t.Errorf("the receiver got %d deliveries while the node may not write", sent)
	}
	if n := s.CountRecords(t, webhooks.AttemptsCollection); n != 0 {
		t.Errorf("%d attempts recorded while the node may not write", n)
	}
	var events []struct {
		Status     string `db:"status"`
		Attempts   int    `db:"attempts"`
		LeaseUntil string `db:"lease_until"`
	}
	if err := s.App.DB().NewQuery("SELECT status, attempts, lease_until FROM webhook_events").All(&events); err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].Status != "pending" || events[0].Attempts != 0 || events[0].LeaseUntil != "" {
		t.Errorf("the outbox holds %+v, want one event pending, never attempted nor leased", events)
	}

	mayWrite.Store(true)
	rcv.waitFor(t, "key.created")
	waitRecordedDelivered(t, s, 1)
	if n := s.CountRecords(t, webhooks.AttemptsCollection); n != 1 {
		t.Errorf("%d attempts recorded once the node may write, want 1", n)
	}
}
