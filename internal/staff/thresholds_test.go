package staff_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/internal/usage"
	"petstore/testkit/apptest"
)

// thresholdData is a usage.threshold event's data.
type thresholdData struct {
	Key       struct{ ID, Name, Plan, State string }
	Customer  *struct{ ID, Name string }
	Threshold int64
	Window    string
	Day       string
	Limit     int64
	Used      int64
	ResetsAt  string
}

// deliveries are what rcv received so far.
func (r *hookReceiver) deliveries() []hookDelivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hookDelivery(nil), r.got...)
}

// sendPets sends n listPets with key to s, each answered with status.
func sendPets(t *testing.T, s *apptest.Server, key string, n, status int) {
	t.Helper()
	for range n {
		if r := s.Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != status {
			t.Fatalf("listPets: %d %s, want %d", r.StatusCode, r.Body, status)
		}
	}
}

// quietFor fails t if rcv receives anything beyond want deliveries within d.
func quietFor(t *testing.T, rcv *hookReceiver, want int, d time.Duration) {
	t.Helper()
	time.Sleep(d)
	if got := rcv.deliveries(); len(got) != want {
		t.Fatalf("%d deliveries %v, want %d", len(got), typesOf(got), want)
	}
}

// freeMetricsAddr is a loopback address nothing listens on.
func freeMetricsAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// metricLine is the value of the series line starting with series in the
// text exposition at addr, or "" without one.
func metricLine(t *testing.T, addr, series string) string {
	t.Helper()
	r, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	body, _ := io.ReadAll(r.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}

// A key with a day quota of 10 is told of at its 8th request (80 %) and its
// 10th (100 %), once each, signed, to a real receiver; neither the requests
// after nor a restart on the same data directory tell again. Each crossing
// is the service's audit record, and counted by plan.
func TestUsageThresholdEventsOnceAtTheirRequest(t *testing.T) {
	apptest.Slow(t)
	metricsAddr := freeMetricsAddr(t)
	started := apptest.StartWith(t, apptest.Config{WebhooksAllowPrivate: true, MetricsAddr: metricsAddr})
	s := &staffServer{started, started.SuperuserToken(t, "staff@example.com", "a long enough password")}
	rcv := newHookReceiver(t)
	_, secret := s.addEndpoint(t, rcv.URL, "usage.threshold")
	var customer struct{ ID string }
	if r := s.Do(t, http.MethodPost, "/api/petstore/customers", s.token, map[string]any{"name": "Acme", "plan": "enterprise"}); r.StatusCode != http.StatusCreated || json.Unmarshal(r.Body, &customer) != nil {
		t.Fatalf("customer: %d %s", r.StatusCode, r.Body)
	}
	key := s.NewKey(t, apikeys.NewKey{Name: "metered", Plan: "enterprise", PerDay: 10})
	id := s.KeyRecord(t, key).Id
	if r := s.Do(t, http.MethodPut, "/api/petstore/keys/"+id+"/customer", s.token, map[string]any{"customer": customer.ID}); r.StatusCode != http.StatusOK {
		t.Fatalf("assign: %d %s", r.StatusCode, r.Body)
	}

	sendPets(t, s.Server, key, 7, http.StatusOK)
	quietFor(t, rcv, 0, 700*time.Millisecond)
	sendPets(t, s.Server, key, 1, http.StatusOK) // the 8th: 80 %
	rcv.waitFor(t, "usage.threshold")
	sendPets(t, s.Server, key, 1, http.StatusOK)
	quietFor(t, rcv, 1, 700*time.Millisecond)
	sendPets(t, s.Server, key, 1, http.StatusOK) // the 10th: 100 %
	got := rcv.waitFor(t, "usage.threshold", "usage.threshold")
	sendPets(t, s.Server, key, 3, http.StatusTooManyRequests)
	quietFor(t, rcv, 2, 1500*time.Millisecond)

	now := time.Now().UTC()
	tomorrow := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC).Format(time.RFC3339)
	for i, want := range []struct{ threshold, used int64 }{{80, 8}, {100, 10}} {
		wh, _ := standardwebhooks.NewWebhook(secret)
		if err := wh.Verify(got[i].body, got[i].header); err != nil {
			t.Errorf("delivery %d: %v", i, err)
		}
		if strings.Contains(string(got[i].body), key) || strings.Contains(string(got[i].body), key[:12]) {
			t.Errorf("delivery %d carries the key: %s", i, got[i].body)
		}
		var data thresholdData
		if err := json.Unmarshal(got[i].Data, &data); err != nil {
			t.Fatal(err)
		}
		if data.Key.ID != id || data.Key.Name != "metered" || data.Key.Plan != "enterprise" || data.Customer == nil ||
			data.Customer.ID != customer.ID || data.Customer.Name != "Acme" || data.Threshold != want.threshold ||
			data.Window != "day" || data.Day != now.Format(time.DateOnly) || data.Limit != 10 || data.Used != want.used ||
			data.ResetsAt != tomorrow {
			t.Errorf("delivery %d: %s, want threshold %d, used %d, resetting at %s", i, got[i].Data, want.threshold, want.used, tomorrow)
		}
	}
	var rows []auditRow
	for _, row := range auditRowsWhere(t, s, audit.KeyField, id) {
		if row.Action == string(audit.UsageThreshold) {
			rows = append(rows, row)
		}
	}
	if len(rows) != 2 || rows[0].Actor != audit.ActorSystem || rows[1].Actor != audit.ActorSystem ||
		!strings.Contains(rows[0].Details, `"threshold":80`) || !strings.Contains(rows[1].Details, `"threshold":100`) {
		t.Errorf("audit records %+v, want two usage.threshold by system", rows)
	}
	for series, want := range map[string]string{
		`petstore_usage_threshold_events_total{plan="enterprise",threshold="80"}`:  "1",
		`petstore_usage_threshold_events_total{plan="enterprise",threshold="100"}`: "1",
		`petstore_api_requests_by_plan_total{outcome="served",plan="enterprise"}`:  "10",
		`petstore_api_requests_by_plan_total{outcome="limited",plan="enterprise"}`: "3",
	} {
		if v := metricLine(t, metricsAddr, series); v != want {
			t.Errorf("%s = %q, want %s", series, v, want)
		}
	}

	// A restart: the day window goes on at 10, every request is refused,
	// and nothing is told again.
	s.Stop(t)
	again := apptest.StartWith(t, apptest.Config{Dir: s.Dir, WebhooksAllowPrivate: true})
	sendPets(t, again, key, 2, http.StatusTooManyRequests)
	quietFor(t, rcv, 2, 1500*time.Millisecond)
	if n := again.CountRecords(t, usage.ThresholdsCollection); n != 2 {
		t.Errorf("%d thresholds recorded, want 2", n)
	}
}

// Two instances on one data directory, each counting the key's day in its
// own memory, each see it cross both thresholds: each is told of once.
func TestUsageThresholdEventsOnceAcrossInstances(t *testing.T) {
	apptest.Slow(t)
	a := startWithWebhooks(t)
	b := apptest.StartWith(t, apptest.Config{Dir: a.Dir, WebhooksAllowPrivate: true})
	rcv := newHookReceiver(t)
	a.addEndpoint(t, rcv.URL, "usage.threshold")
	key := a.NewKey(t, apikeys.NewKey{Name: "shared", Plan: "enterprise", PerDay: 10})
	sendPets(t, a.Server, key, 10, http.StatusOK)
	rcv.waitFor(t, "usage.threshold", "usage.threshold")
	// b counts from 0, or from what a had saved (its flush): either way its
	// window passes both thresholds, and its 11th request is refused.
	var last *apptest.Response
	for range 11 {
		last = b.Do(t, http.MethodGet, "/v1/pets", key, nil)
	}
	if last.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("b's 11th request: %d, want 429", last.StatusCode)
	}
	quietFor(t, rcv, 2, 1500*time.Millisecond)
	var thresholds []int64
	for _, d := range rcv.deliveries() {
		var data thresholdData
		_ = json.Unmarshal(d.Data, &data)
		thresholds = append(thresholds, data.Threshold)
	}
	if len(thresholds) != 2 || thresholds[0] != 80 || thresholds[1] != 100 {
		t.Errorf("thresholds told of %v, want [80 100]", thresholds)
	}
	if n := b.CountRecords(t, usage.ThresholdsCollection); n != 2 {
		t.Errorf("%d thresholds recorded, want 2", n)
	}
}

// Two keys of a customer whose plan counts per customer share one day
// window: its crossings are told of once for the customer, by whichever
// key's request crossed, not once per key.
func TestUsageThresholdEventsOncePerCustomer(t *testing.T) {
	apptest.Slow(t)
	s := startWithWebhooks(t)
	rcv := newHookReceiver(t)
	s.addEndpoint(t, rcv.URL, "usage.threshold")
	plan, err := s.App.FindFirstRecordByData(apikeys.PlansCollection, "name", "pro")
	if err != nil {
		t.Fatal(err)
	}
	plan.Set("counted", "customer")
	plan.Set("per_minute", 5)
	plan.Set("per_day", 5)
	if err := s.App.Save(plan); err != nil {
		t.Fatal(err)
	}
	var customer struct{ ID string }
	if r := s.Do(t, http.MethodPost, "/api/petstore/customers", s.token, map[string]any{"name": "Acme", "plan": "pro"}); r.StatusCode != http.StatusCreated || json.Unmarshal(r.Body, &customer) != nil {
		t.Fatalf("customer: %d %s", r.StatusCode, r.Body)
	}
	var keys []string
	for _, name := range []string{"production", "staging"} {
		key := s.NewKey(t, apikeys.NewKey{Name: name, Plan: "free"})
		if r := s.Do(t, http.MethodPut, "/api/petstore/keys/"+s.KeyRecord(t, key).Id+"/customer", s.token, map[string]any{"customer": customer.ID}); r.StatusCode != http.StatusOK {
			t.Fatalf("assign: %d %s", r.StatusCode, r.Body)
		}
		keys = append(keys, key)
	}
	production, staging := keys[0], keys[1]
	for _, key := range []string{production, staging, production, staging} { // the 4th: 80 % of 5
		sendPets(t, s.Server, key, 1, http.StatusOK)
	}
	rcv.waitFor(t, "usage.threshold")
	sendPets(t, s.Server, production, 1, http.StatusOK) // the 5th: 100 %
	rcv.waitFor(t, "usage.threshold", "usage.threshold")
	sendPets(t, s.Server, staging, 2, http.StatusTooManyRequests)
	sendPets(t, s.Server, production, 1, http.StatusTooManyRequests)
	quietFor(t, rcv, 2, 1500*time.Millisecond)

	stagingID, productionID := s.KeyRecord(t, staging).Id, s.KeyRecord(t, production).Id
	for i, want := range []struct {
		threshold, used int64
		key             string
	}{{80, 4, stagingID}, {100, 5, productionID}} {
		var data thresholdData
		if err := json.Unmarshal(rcv.deliveries()[i].Data, &data); err != nil {
			t.Fatal(err)
		}
		if data.Threshold != want.threshold || data.Used != want.used || data.Limit != 5 || data.Key.ID != want.key ||
			data.Customer == nil || data.Customer.ID != customer.ID {
			t.Errorf("delivery %d: %+v, want threshold %d, used %d of 5, by key %s of customer %s",
				i, data, want.threshold, want.used, want.key, customer.ID)
		}
	}
	if n := s.CountRecords(t, usage.ThresholdsCollection); n != 2 {
		t.Errorf("%d thresholds recorded, want 2: once for the customer", n)
	}
}
