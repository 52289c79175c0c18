package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/internal/customers"
	"petstore/internal/limits"
	"petstore/testkit/apptest"
)

// setCounted sets how the plan named name counts, and its per-minute quota,
// as staff do in the dashboard: the next request of its keys follows, on
// every instance, without a restart.
func setCounted(t *testing.T, s *apptest.Server, name, counted string, perMinute int) {
	t.Helper()
	plan, err := s.App.FindFirstRecordByData(apikeys.PlansCollection, "name", name)
	if err != nil {
		t.Fatal(err)
	}
	plan.Set("counted", counted)
	plan.Set("per_minute", perMinute)
	if err := s.App.Save(plan); err != nil {
		t.Fatal(err)
	}
}

// customerKey is a new key on plan, given to the customer named customer.
func customerKey(t *testing.T, s *apptest.Server, customer string, nk apikeys.NewKey) string {
	t.Helper()
	key := s.NewKey(t, nk)
	if _, err := customers.Assign(s.App, s.KeyRecord(t, key).Id, customer, audit.System); err != nil {
		t.Fatal(err)
	}
	return key
}

// expectMinute checks a listPets answered status with the minute window's
// headers: its limit and what it has left, in X-RateLimit-* and in the
// RateLimit field.
func expectMinute(t *testing.T, what string, r *apptest.Response, status int, limit, left int64) {
	t.Helper()
	gotLimit, gotLeft := rateHeaders(t, r)
	item := fmt.Sprintf(`"minute";r=%d;`, left)
	if r.StatusCode != status || gotLimit != limit || gotLeft != left || !strings.Contains(r.Header.Get("RateLimit"), item) {
		t.Fatalf("%s: %d, X-RateLimit-Limit %d, X-RateLimit-Remaining %d, RateLimit %q; want %d, %d, %d, %s",
			what, r.StatusCode, gotLimit, gotLeft, r.Header.Get("RateLimit"), status, limit, left, item)
	}
}

// testCustomerWindows runs the keys of one customer through a plan counted
// per key, then per customer, on servers (one, or several instances of one
// data directory sharing a Redis), each request on the next server.
func testCustomerWindows(t *testing.T, servers ...*apptest.Server) {
	s := servers[0]
	server := 0
	list := func(key string) *apptest.Response {
		server = (server + 1) % len(servers)
		return servers[server].Do(t, http.MethodGet, "/v1/pets", key, nil)
	}
	setCounted(t, s, "pro", "key", 4)
	name := "Acme"
	plan := "pro"
	if _, err := customers.Create(s.App, customers.Input{Name: &name, Plan: &plan}, audit.System); err != nil {
		t.Fatal(err)
	}
	a := customerKey(t, s, name, apikeys.NewKey{Name: "production", Plan: "free"})
	b := customerKey(t, s, name, apikeys.NewKey{Name: "staging", Plan: "free"})
	// A key with its own quota counts per key, whatever its plan says.
	own := customerKey(t, s, name, apikeys.NewKey{Name: "partner", Plan: "free", PerMinute: 2})

	// Per key: each key of the customer has a window of its own.
	for i := range 4 {
		expectMinute(t, fmt.Sprintf("per key: a's request %d", i+1), list(a), http.StatusOK, 4, int64(3-i))
	}
	expectMinute(t, "per key: a's 5th", list(a), http.StatusTooManyRequests, 4, 0)
	expectMinute(t, "per key: b's 1st, beside a's full window", list(b), http.StatusOK, 4, 3)

	// Per customer, from the next request on: a and b share one window of
	// 5, exact at its edge, whichever key and instance sends.
	setCounted(t, s, "pro", "customer", 5)
	for i, key := range []string{a, b, a, b, b} {
		expectMinute(t, fmt.Sprintf("per customer: request %d", i+1), list(key), http.StatusOK, 5, int64(4-i))
	}
	for _, key := range []string{a, b} {
		r := list(key)
		expectMinute(t, "per customer: the 6th", r, http.StatusTooManyRequests, 5, 0)
		if after := retryAfter(t, r, "rate_limit_exceeded"); after > 60 {
			t.Fatalf("the 6th: Retry-After %d, want the minute window's", after)
		}
	}
	expectMinute(t, "the key with its own quota", list(own), http.StatusOK, 2, 1)
}

func TestCustomerWindowsInMemory(t *testing.T) {
	testCustomerWindows(t, apptest.Start(t, ""))
}

func TestRedisCustomerWindowsAcrossInstances(t *testing.T) {
	a, b := twoInstancesOnOneRedis(t)
	testCustomerWindows(t, a, b)
}

// Keys that share their customer's windows share their ban: it is saved on
// the key whose request reached the threshold, every sharing key is refused
// while it lasts, and lifting it on that key lets both through.
func TestCustomerBanSharedAndLifted(t *testing.T) {
	s := apptest.Start(t, "")
	setCounted(t, s, "pro", "customer", 3)
	name, plan := "Acme", "pro"
	if _, err := customers.Create(s.App, customers.Input{Name: &name, Plan: &plan}, audit.System); err != nil {
		t.Fatal(err)
	}
	a := customerKey(t, s, name, apikeys.NewKey{Name: "production", Plan: "free"})
	b := customerKey(t, s, name, apikeys.NewKey{Name: "staging", Plan: "free"})
	for _, key := range []string{a, b, a} {
		if r := s.Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != http.StatusOK {
			t.Fatalf("within the shared quota: %d", r.StatusCode)
		}
	}
	// Rejections of both keys count towards one ban; b's reaches it.
	for i := range limits.MinBanAfter - 1 {
		retryAfter(t, s.Do(t, http.MethodGet, "/v1/pets", []string{a, b}[i%2], nil), "rate_limit_exceeded")
	}
	retryAfter(t, s.Do(t, http.MethodGet, "/v1/pets", b, nil), "api_key_banned")
	recordA, recordB := s.KeyRecord(t, a), s.KeyRecord(t, b)
	if !recordA.BannedUntil().IsZero() || time.Until(recordB.BannedUntil()) < 14*time.Minute {
		t.Fatalf("banned_until: a %v, b %v; want b's alone, about 15 minutes ahead", recordA.BannedUntil(), recordB.BannedUntil())
	}
	retryAfter(t, s.Do(t, http.MethodGet, "/v1/pets", a, nil), "api_key_banned")

	token := s.StaffToken(t)
	if r := s.Do(t, http.MethodPost, "/api/petstore/keys/"+recordB.Id+"/lift-ban", "", nil, "Authorization", token); r.StatusCode != http.StatusOK {
		t.Fatalf("lift ban: %d %s", r.StatusCode, r.Body)
	}
	for _, key := range []string{a, b} {
		if r := s.Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != http.StatusOK {
			t.Fatalf("after lifting the ban: %d %s", r.StatusCode, r.Body)
		}
	}
}
