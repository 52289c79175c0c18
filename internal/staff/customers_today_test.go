package staff_test

import (
	"net/http"
	"testing"
)

// The customers' list shows each customer's use today: the sum of what the
// keys' list shows for its keys, served and refused with 429 alike; a key of
// no customer counts to none.
func TestCustomerTodayIsItsKeysSum(t *testing.T) {
	s := start(t)
	var acme struct{ ID string }
	s.call(t, http.MethodPost, "/customers", map[string]any{"name": "Acme", "plan": "free"}, http.StatusCreated, &acme)
	a := s.create(t, map[string]any{"plan": "free", "name": "production", "perMinute": 2})
	b := s.create(t, map[string]any{"plan": "free", "name": "staging"})
	solo := s.create(t, map[string]any{"plan": "free", "name": "solo"})
	for _, k := range []key{a, b} {
		s.call(t, http.MethodPut, "/keys/"+k.ID+"/customer", map[string]any{"customer": acme.ID}, http.StatusOK, nil)
	}
	for range 3 { // the third past its 2 a minute
		s.v1(t, a.Key)
	}
	for range 4 {
		s.v1(t, b.Key)
	}
	s.v1(t, solo.Key)

	var keys keyList
	s.call(t, http.MethodGet, "/keys", nil, http.StatusOK, &keys)
	var served, refused int64
	for _, k := range keys.Items {
		if k.ID == a.ID || k.ID == b.ID {
			served += k.Today.Served
			refused += k.Today.Refused
		}
	}
	if served != 6 || refused != 1 {
		t.Fatalf("the keys of Acme today: %d served, %d refused, want 6 and 1", served, refused)
	}
	var list struct {
		Items []struct {
			ID    string `json:"id"`
			Today struct {
				Served  int64 `json:"served"`
				Refused int64 `json:"refused"`
			} `json:"today"`
		} `json:"items"`
	}
	s.call(t, http.MethodGet, "/customers", nil, http.StatusOK, &list)
	if len(list.Items) != 1 || list.Items[0].ID != acme.ID || list.Items[0].Today.Served != served || list.Items[0].Today.Refused != refused {
		t.Errorf("the customers' list: %+v, want Acme with %d served and %d refused today", list.Items, served, refused)
	}
}
