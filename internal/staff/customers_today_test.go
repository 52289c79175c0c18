package staff_test

import (
	"net/http"
	"testing"
	"time"
)

// customerWithKeys makes the customer name on plan and issues a key with
// each body, given to the customer: their ids, the keys in the bodies'
// order.
func (s *staffServer) customerWithKeys(t *testing.T, name, plan string, bodies ...map[string]any) (string, []key) {
	t.Helper()
	var c struct{ ID string }
	s.call(t, http.MethodPost, "/customers", map[string]any{"name": name, "plan": plan}, http.StatusCreated, &c)
	keys := make([]key, len(bodies))
	for i, body := range bodies {
		keys[i] = s.create(t, body)
		s.call(t, http.MethodPut, "/keys/"+keys[i].ID+"/customer", map[string]any{"customer": c.ID}, http.StatusOK, nil)
	}
	return c.ID, keys
}

// The customers' list shows each customer's use today: the sum of what the
// keys' list shows for its keys, served and refused with 429 alike; a key of
// no customer counts to none.
func TestCustomerTodayIsItsKeysSum(t *testing.T) {
	s := start(t)
	acme, keys := s.customerWithKeys(t, "Acme", "free",
		map[string]any{"plan": "free", "name": "production", "perMinute": 2}, map[string]any{"plan": "free", "name": "staging"})
	a, b := keys[0], keys[1]
	solo := s.create(t, map[string]any{"plan": "free", "name": "solo"})
	for range 3 { // the third past its 2 a minute
		s.v1(t, a.Key)
	}
	for range 4 {
		s.v1(t, b.Key)
	}
	s.v1(t, solo.Key)

	var list keyList
	s.call(t, http.MethodGet, "/keys", nil, http.StatusOK, &list)
	var served, refused int64
	for _, k := range list.Items {
		if k.ID == a.ID || k.ID == b.ID {
			served += k.Today.Served
			refused += k.Today.Refused
		}
	}
	if served != 6 || refused != 1 {
		t.Fatalf("the keys of Acme today: %d served, %d refused, want 6 and 1", served, refused)
	}
	var customers struct {
		Items []struct {
			ID    string `json:"id"`
			Today struct {
				Served  int64 `json:"served"`
				Refused int64 `json:"refused"`
			} `json:"today"`
		} `json:"items"`
	}
	s.call(t, http.MethodGet, "/customers", nil, http.StatusOK, &customers)
	if len(customers.Items) != 1 || customers.Items[0].ID != acme || customers.Items[0].Today.Served != served || customers.Items[0].Today.Refused != refused {
		t.Errorf("the customers' list: %+v, want Acme with %d served and %d refused today", customers.Items, served, refused)
	}
}

// The hourly charts read each of the last 48 UTC hours, oldest first: a
// key's hour holds its requests by outcome, as sent; its customer's, the
// sum of its keys'.
func TestHourlyChartsOfKeyAndCustomer(t *testing.T) {
	s := start(t)
	acme, keys := s.customerWithKeys(t, "Acme", "free",
		map[string]any{"plan": "free", "name": "production", "perMinute": 2}, map[string]any{"plan": "free", "name": "staging"})
	a, b := keys[0], keys[1]
	for range 3 { // the third past its 2 a minute
		s.v1(t, a.Key)
	}
	s.v1(t, b.Key)
	type hour struct {
		Hour     string `json:"hour"`
		Requests int64  `json:"requests"`
		Limited  int64  `json:"limited"`
	}
	// read sums the 48 hours: the load may straddle an hour's end.
	read := func(path string) (sum hour) {
		t.Helper()
		var hours []hour
		s.call(t, http.MethodGet, path, nil, http.StatusOK, &hours)
		now := time.Now().UTC()
		if len(hours) != 48 || hours[47].Hour != now.Format("2006-01-02T15:00Z") && hours[47].Hour != now.Add(-time.Hour).Format("2006-01-02T15:00Z") {
			t.Fatalf("%s: %d hours, the last %+v", path, len(hours), hours[len(hours)-1])
		}
		for _, h := range hours {
			sum.Requests += h.Requests
			sum.Limited += h.Limited
		}
		return sum
	}
	if got := read("/keys/" + a.ID + "/hours"); got.Requests != 3 || got.Limited != 1 {
		t.Errorf("the hours of %s: %+v, want 3 requests, 1 limited", a.Name, got)
	}
	if got := read("/customers/" + acme + "/hours"); got.Requests != 4 || got.Limited != 1 {
		t.Errorf("the hours of Acme: %+v, want 4 requests, 1 limited", got)
	}
	s.call(t, http.MethodGet, "/customers/nosuchcustomer1/hours", nil, http.StatusNotFound, nil)
}
