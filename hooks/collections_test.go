package hooks_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"petstore/apikeys"
	"petstore/internal/apptest"
)

// PocketBase's record API is the dashboard's: closed to anonymous callers and
// to API keys, open to superusers.
func TestRecordAPIIsForSuperusersOnly(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Name: "shop"})
	pet := createPet(t, s, key, map[string]any{"name": "Rex", "categoryId": 1})
	superuser := superuserToken(t, s)
	plan, err := s.App.FindFirstRecordByData("plans", "name", "free")
	if err != nil {
		t.Fatal(err)
	}

	collections := []struct {
		name, id, secret string // secret: a value of the record that must not leak
		newRecord        map[string]any
	}{
		{"pets", fmt.Sprint(pet.ID), "Rex", map[string]any{"name": "Tom", "categoryId": 2}},
		{"api_keys", keyRecord(t, s, key).Id, "shop", map[string]any{"name": "mine", "plan": plan.Id, "key_hash": apikeys.Hash("x")}},
		{"plans", plan.Id, "free", map[string]any{"name": "gold", "per_minute": 5, "per_day": 50}},
	}
	for _, c := range collections {
		base := "/api/collections/" + c.name + "/records"
		for _, caller := range []struct{ name, token string }{{"anonymous", ""}, {"API key", key}} {
			t.Run(c.name+"/"+caller.name, func(t *testing.T) {
				before := countRecords(t, s, c.name)
				for _, r := range []*apptest.Response{
					s.Do(t, http.MethodGet, base, caller.token, nil),
					s.Do(t, http.MethodGet, base+"/"+c.id, caller.token, nil),
					s.Do(t, http.MethodPost, base, caller.token, c.newRecord),
				} {
					if r.StatusCode < 400 || r.StatusCode > 499 || strings.Contains(string(r.Body), c.secret) ||
						strings.Contains(string(r.Body), c.id) {
						t.Errorf("%s %s: %d %s, want a 4xx without the record", r.Request.Method, r.Request.URL.Path, r.StatusCode, r.Body)
					}
				}
				if countRecords(t, s, c.name) != before {
					t.Errorf("%s created a record", caller.name)
				}
			})
		}
		t.Run(c.name+"/superuser", func(t *testing.T) {
			for _, path := range []string{base, base + "/" + c.id} {
				r := s.Do(t, http.MethodGet, path, superuser, nil)
				if r.StatusCode != http.StatusOK || !strings.Contains(string(r.Body), c.secret) {
					t.Errorf("GET %s: %d %s, want 200 with the record", path, r.StatusCode, r.Body)
				}
				if strings.Contains(string(r.Body), key) {
					t.Errorf("GET %s shows an API key: %s", path, r.Body)
				}
			}
			before, created := countRecords(t, s, c.name), int64(1)
			r := s.Do(t, http.MethodPost, base, superuser, c.newRecord)
			switch {
			case c.name == "api_keys":
				// Keys are issued where they can be shown once; see TestDashboardCannotCreateKeys.
				created = 0
				if r.StatusCode != http.StatusBadRequest {
					t.Errorf("POST %s: %d %s, want 400", base, r.StatusCode, r.Body)
				}
			case r.StatusCode != http.StatusOK:
				t.Errorf("POST %s: %d %s", base, r.StatusCode, r.Body)
			}
			if countRecords(t, s, c.name) != before+created {
				t.Errorf("the superuser's create stored %d records, want %d", countRecords(t, s, c.name)-before, created)
			}
		})
	}
}
