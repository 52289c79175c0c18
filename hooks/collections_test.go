package hooks_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"petstore/internal/apikeys"
	"petstore/testkit/apptest"
)

// PocketBase's record API is the dashboard's: closed to anonymous callers and
// to API keys, open to superusers.
func TestRecordAPIIsForSuperusersOnly(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Name: "shop"})
	pet := s.CreatePet(t, key, map[string]any{"name": "Rex", "categoryId": 1})
	superuser := s.StaffToken(t)
	plan, err := s.App.FindFirstRecordByData("plans", "name", "free")
	if err != nil {
		t.Fatal(err)
	}

	collections := []struct {
		name, id, secret string // secret: a value of the record that must not leak
		newRecord        map[string]any
	}{
		{"pets", fmt.Sprint(pet.ID), "Rex", map[string]any{"name": "Tom", "categoryId": 2}},
		{"api_keys", s.KeyRecord(t, key).Id, "shop", map[string]any{"name": "mine", "plan": plan.Id, "key_hash": apikeys.Hash("x")}},
		{"plans", plan.Id, "free", map[string]any{"name": "gold", "per_minute": 5, "per_day": 50}},
	}
	for _, c := range collections {
		base := "/api/collections/" + c.name + "/records"
		for _, caller := range []struct{ name, token string }{{"anonymous", ""}, {"API key", key}} {
			t.Run(c.name+"/"+caller.name, func(t *testing.T) {
				before := s.CountRecords(t, c.name)
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
				if s.CountRecords(t, c.name) != before {
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
			before, created := s.CountRecords(t, c.name), int64(1)
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
			if s.CountRecords(t, c.name) != before+created {
				t.Errorf("the superuser's create stored %d records, want %d", s.CountRecords(t, c.name)-before, created)
			}
		})
	}
}

// A pet's name in the dashboard keeps /v1's rule: no control or
// text-direction characters, on create and on update.
func TestPetRecordNameIsPrintable(t *testing.T) {
	s := apptest.Start(t, "")
	superuser := s.StaffToken(t)
	r := s.Do(t, http.MethodPost, "/api/collections/pets/records", superuser, map[string]any{"name": "Rex\u202egod", "categoryId": 7})
	if r.StatusCode != http.StatusBadRequest || !strings.Contains(string(r.Body), "text-direction") {
		t.Fatalf("a name with U+202E: %d %s", r.StatusCode, r.Body)
	}
	r = s.Do(t, http.MethodPost, "/api/collections/pets/records", superuser, map[string]any{"name": "Rex", "categoryId": 7})
	var rec struct{ ID string }
	if r.StatusCode != http.StatusOK || json.Unmarshal(r.Body, &rec) != nil {
		t.Fatalf("record create: %d %s", r.StatusCode, r.Body)
	}
	r = s.Do(t, http.MethodPatch, "/api/collections/pets/records/"+rec.ID, superuser, map[string]any{"name": "R\nx"})
	if r.StatusCode != http.StatusBadRequest || !strings.Contains(string(r.Body), "control") {
		t.Fatalf("renamed with a newline: %d %s", r.StatusCode, r.Body)
	}
}

// A pet created through /v1 (a plain INSERT) is stored as a pet created as a
// record through PocketBase's records API: the same values, the same column
// types, the autodate fields in PocketBase's format.
func TestPetFromV1IsStoredAsARecord(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Name: "shop"})
	superuser := s.StaffToken(t)
	v1 := s.CreatePet(t, key, map[string]any{"name": "  Rex  ", "categoryId": 7})
	r := s.Do(t, http.MethodPost, "/api/collections/pets/records", superuser, map[string]any{"name": "  Rex  ", "categoryId": 7})
	if r.StatusCode != http.StatusOK {
		t.Fatalf("record create: %d %s", r.StatusCode, r.Body)
	}
	var rec struct{ ID string }
	if err := json.Unmarshal(r.Body, &rec); err != nil {
		t.Fatal(err)
	}

	read := func(id string) map[string]any {
		r := s.Do(t, http.MethodGet, "/api/collections/pets/records/"+id, superuser, nil)
		if r.StatusCode != http.StatusOK {
			t.Fatalf("record view %s: %d %s", id, r.StatusCode, r.Body)
		}
		var m map[string]any
		if err := json.Unmarshal(r.Body, &m); err != nil {
			t.Fatal(err)
		}
		var types string
		if err := s.App.DB().NewQuery("SELECT typeof(id)||typeof(name)||typeof(categoryId)||typeof(status)||typeof(created)||typeof(updated) FROM pets WHERE id = {:id}").
			Bind(map[string]any{"id": id}).Row(&types); err != nil {
			t.Fatal(err)
		}
		m["columnTypes"] = types
		return m
	}
	fromV1, fromRecord := read(fmt.Sprint(v1.ID)), read(rec.ID)
	// PocketBase stamps a record's two dates one after the other, which may
	// straddle a millisecond; /v1 stamps both with one instant.
	layout := regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z$`)
	for _, c := range []struct {
		m     map[string]any
		apart time.Duration
	}{{fromV1, 0}, {fromRecord, time.Millisecond}} {
		m := c.m
		created, errC := time.Parse("2006-01-02 15:04:05.000Z", fmt.Sprint(m["created"]))
		updated, errU := time.Parse("2006-01-02 15:04:05.000Z", fmt.Sprint(m["updated"]))
		if !layout.MatchString(fmt.Sprint(m["created"])) || errC != nil || errU != nil || created.Sub(updated).Abs() > c.apart {
			t.Errorf("created %v, updated %v: want one instant (within %v) in PocketBase's layout", m["created"], m["updated"], c.apart)
		}
		delete(m, "id")
		delete(m, "created")
		delete(m, "updated")
	}
	if !reflect.DeepEqual(fromV1, fromRecord) {
		t.Errorf("created through /v1: %v\ncreated as a record: %v", fromV1, fromRecord)
	}
	if fromV1["name"] != "Rex" || fromV1["status"] != "available" {
		t.Errorf("stored %v, want the name trimmed and the status available", fromV1)
	}
}
