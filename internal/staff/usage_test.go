package staff_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/internal/apikeys"
	"petstore/testkit/apptest"
)

// nearLimit is GET /usage/near-limit's answer.
type nearLimit struct {
	Day       string   `json:"day"`
	Percent   int64    `json:"percent"`
	Keys      []window `json:"keys"`
	Customers []window `json:"customers"`
}

type window struct {
	ID           string  `json:"id"`
	Name         string  `json:"name"`
	Customer     string  `json:"customer"`
	CustomerName string  `json:"customerName"`
	Plan         string  `json:"plan"`
	Keys         int64   `json:"keys"`
	Used         int64   `json:"used"`
	Limit        int64   `json:"limit"`
	Percent      float64 `json:"percent"`
}

// topCustomers is GET /usage/top-customers' answer.
type topCustomers struct {
	Month string `json:"month"`
	Items []struct {
		ID       string `json:"id"`
		Name     string `json:"name"`
		Plan     string `json:"plan"`
		Counted  string `json:"counted"`
		Requests int64  `json:"requests"`
		Limited  int64  `json:"limited"`
		Quota    *struct {
			PerDay  int64   `json:"perDay"`
			Days    int64   `json:"days"`
			Used    int64   `json:"used"`
			Percent float64 `json:"percent"`
		} `json:"quota"`
	} `json:"items"`
}

// A known load today: Acme's two keys share a window of 10 a day (its plan
// counts per customer) and use 8 of it; Globex's key "web" uses 9 of its
// own 10, its key "api" 1 of 10; a key of no customer 3 of its 5, and a
// revoked key all of its 5. Near the limit (80 % or more, counted as the
// day windows count): Acme, and web, named with their customers, fullest
// first; the top customers this month: Globex (10 requests), then Acme (8,
// with its share of its day quota over the month's days so far); both read
// what was just counted, not yet saved.
func TestTopCustomersAndNearLimit(t *testing.T) {
	s := start(t)
	plan, err := s.App.FindFirstRecordByData(apikeys.PlansCollection, "name", "pro")
	if err != nil {
		t.Fatal(err)
	}
	plan.Set("counted", "customer")
	plan.Set("per_minute", 10)
	plan.Set("per_day", 10)
	if err := s.App.Save(plan); err != nil {
		t.Fatal(err)
	}
	acme, acmeKeys := s.customerWithKeys(t, "Acme", "pro", map[string]any{"plan": "free", "name": "production"}, map[string]any{"plan": "free", "name": "staging"})
	globex, globexKeys := s.customerWithKeys(t, "Globex", "free",
		map[string]any{"plan": "free", "name": "web", "perMinute": 10, "perDay": 10}, map[string]any{"plan": "free", "name": "api", "perMinute": 10, "perDay": 10})
	solo := s.create(t, map[string]any{"plan": "free", "name": "solo", "perMinute": 5, "perDay": 5})
	gone := s.create(t, map[string]any{"plan": "free", "name": "gone", "perMinute": 5, "perDay": 5})
	send := func(k key, n int) {
		t.Helper()
		for range n {
			if status := s.v1(t, k.Key); status != http.StatusOK {
				t.Fatalf("%s: %d", k.Name, status)
			}
		}
	}
	send(acmeKeys[0], 5)
	send(acmeKeys[1], 3)
	send(globexKeys[0], 9)
	send(globexKeys[1], 1)
	send(solo, 3)
	send(gone, 5)
	s.call(t, http.MethodPost, "/keys/"+gone.ID+"/revoke", nil, http.StatusOK, nil)

	var near nearLimit
	s.call(t, http.MethodGet, "/usage/near-limit", nil, http.StatusOK, &near)
	if near.Day != time.Now().UTC().Format(time.DateOnly) || near.Percent != 80 {
		t.Errorf("near the limit on %s past %d %%", near.Day, near.Percent)
	}
	if len(near.Keys) != 1 || near.Keys[0] != (window{ID: globexKeys[0].ID, Name: "web", Customer: globex, CustomerName: "Globex", Plan: "free",
		Keys: 1, Used: 9, Limit: 10, Percent: 90}) {
		t.Errorf("keys near their limit: %+v, want web alone, 9 of 10", near.Keys)
	}
	if len(near.Customers) != 1 || near.Customers[0] != (window{ID: acme, Name: "Acme", Customer: acme, CustomerName: "Acme", Plan: "pro",
		Keys: 2, Used: 8, Limit: 10, Percent: 80}) {
		t.Errorf("customers near their limit: %+v, want Acme alone, 8 of 10 by 2 keys", near.Customers)
	}

	var top topCustomers
	s.call(t, http.MethodGet, "/usage/top-customers", nil, http.StatusOK, &top)
	now := time.Now().UTC()
	if top.Month != now.Format("2006-01") || len(top.Items) != 2 {
		t.Fatalf("the top customers: %+v", top)
	}
	g, a := top.Items[0], top.Items[1]
	if g.ID != globex || g.Name != "Globex" || g.Plan != "free" || g.Counted != "key" || g.Requests != 10 || g.Quota != nil {
		t.Errorf("the first: %+v, want Globex, 10 requests, no quota of its own (its plan counts per key)", g)
	}
	if a.ID != acme || a.Plan != "pro" || a.Counted != "customer" || a.Requests != 8 || a.Quota == nil ||
		a.Quota.PerDay != 10 || a.Quota.Days != int64(now.Day()) || a.Quota.Used != 8 || a.Quota.Percent != 80/float64(now.Day()) {
		t.Errorf("the second: %+v (quota %+v), want Acme, 8 requests, 8 of 10 a day over %d days", a, a.Quota, now.Day())
	}
	s.call(t, http.MethodGet, "/usage/top-customers?limit=1", nil, http.StatusOK, &top)
	if len(top.Items) != 1 || top.Items[0].ID != globex {
		t.Errorf("the top customer: %+v, want Globex alone", top.Items)
	}
	for _, query := range []string{"limit=0", "limit=101", "limit=1&limit=2", "limit=x"} {
		if r := s.Do(t, http.MethodGet, "/api/petstore/usage/top-customers?"+query, s.token, nil); r.StatusCode != http.StatusBadRequest || !strings.Contains(string(r.Body), "imit") {
			t.Errorf("top-customers?%s: %d %s, want 400 about limit", query, r.StatusCode, r.Body)
		}
	}
	for _, path := range []string{"/usage/near-limit", "/usage/top-customers"} {
		if r := s.Do(t, http.MethodGet, "/api/petstore"+path, solo.Key, nil); r.StatusCode != http.StatusUnauthorized {
			t.Errorf("an API key reads %s: %d, want 401", path, r.StatusCode)
		}
	}
}

// The by-day charts read the last 90 UTC days, oldest first, today's last:
// a customer's day is the sum of its keys', a key's its own.
func TestDailyChartsOfKeyAndCustomer(t *testing.T) {
	s := start(t)
	acme, keys := s.customerWithKeys(t, "Acme", "free",
		map[string]any{"plan": "free", "name": "production", "perMinute": 2}, map[string]any{"plan": "free", "name": "staging"})
	for range 3 { // the third past its 2 a minute
		s.v1(t, keys[0].Key)
	}
	s.v1(t, keys[1].Key)
	type day struct {
		Day      string `json:"day"`
		Requests int64  `json:"requests"`
		Limited  int64  `json:"limited"`
	}
	read := func(path string) day {
		t.Helper()
		var days []day
		s.call(t, http.MethodGet, path, nil, http.StatusOK, &days)
		today := time.Now().UTC()
		if len(days) != 90 || days[89].Day != today.Format(time.DateOnly) || days[0].Day != today.AddDate(0, 0, -89).Format(time.DateOnly) {
			t.Fatalf("%s: %d days, from %+v to %+v", path, len(days), days[0], days[len(days)-1])
		}
		return days[89]
	}
	if got := read("/keys/" + keys[0].ID + "/usage?days=90"); got.Requests != 3 || got.Limited != 1 {
		t.Errorf("today of production: %+v, want 3 requests, 1 limited", got)
	}
	if got := read("/customers/" + acme + "/usage?days=90"); got.Requests != 4 || got.Limited != 1 {
		t.Errorf("today of Acme: %+v, want 4 requests, 1 limited", got)
	}
	s.call(t, http.MethodGet, "/customers/"+acme+"/usage?days=91", nil, http.StatusBadRequest, nil)
	s.call(t, http.MethodGet, "/customers/nosuchcustomer1/usage", nil, http.StatusNotFound, nil)
}

// The page reads near-limit and top-customers at once: each saves what its
// instance has counted first, and one that comes while the other's save is
// writing waits for it, so both read every request answered before them.
// Another connection holds the write lock, so that the first save to take
// the counts waits to write them: the other read, before it waited, found
// nothing left to save and answered without them.
func TestUseReadsSideBySideSeeEveryRequest(t *testing.T) {
	apptest.Slow(t)
	s := start(t)
	_, keys := s.customerWithKeys(t, "Acme", "free", map[string]any{"plan": "free", "name": "web", "perMinute": 20, "perDay": 20})
	for range 3 {
		s.v1(t, keys[0].Key)
	}
	lock := s.HoldWriteLock(t)
	answered := make(chan topCustomers, 2)
	for range 2 {
		go func() {
			var top topCustomers
			r := s.Do(t, http.MethodGet, "/api/petstore/usage/top-customers", s.token, nil)
			r.JSON(t, &top)
			answered <- top
		}()
	}
	// Released at the first answer, or after a second: with the fix, no
	// answer comes while the lock is held.
	var got []topCustomers
	select {
	case top := <-answered:
		got = append(got, top)
	case <-time.After(time.Second):
	}
	if _, err := lock.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	for len(got) < 2 {
		got = append(got, <-answered)
	}
	for i, top := range got {
		if len(top.Items) != 1 || top.Items[0].Requests != 3 {
			t.Errorf("read %d: the top customers %+v, want Acme with 3 requests", i, top.Items)
		}
	}
}
