package hooks_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/apikeys"
	"petstore/internal/apptest"
)

// "New record" on api_keys in the dashboard says where keys are issued.
func TestDashboardCannotCreateKeys(t *testing.T) {
	s := apptest.Start(t, "")
	token := superuserToken(t, s)
	plan, err := s.App.FindFirstRecordByData("plans", "name", "free")
	if err != nil {
		t.Fatal(err)
	}
	// What the dashboard's form sends: every field, key_hash left empty.
	r := s.Do(t, http.MethodPost, "/api/collections/api_keys/records", token, map[string]any{
		"name": "shop", "plan": plan.Id, "key_hash": "", "prefix": "", "revoked": false, "expires": "",
		"per_minute": 0, "per_day": 0, "banned_until": "", "last_used": "", "day_used": 0, "day_resets": "",
	})
	var e struct {
		Message string `json:"message"`
	}
	r.JSON(t, &e)
	if r.StatusCode != http.StatusBadRequest || !strings.Contains(e.Message, "/staff/") ||
		!strings.Contains(e.Message, "petstore keys create") {
		t.Errorf("%d %s, want 400 naming /staff/ and petstore keys create", r.StatusCode, r.Body)
	}
	if n := countRecords(t, s, apikeys.Collection); n != 0 {
		t.Errorf("%d keys stored", n)
	}
}

// A key form opened before a ban (or a roll) and saved later, as the
// dashboard sends it (every field as loaded), changes what staff edited and
// leaves the ban, the secrets and the counts as they are.
func TestStaleKeyFormKeepsBan(t *testing.T) {
	s := apptest.Start(t, "")
	token := superuserToken(t, s)
	key := s.NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 1, Name: "shop"})
	id := keyRecord(t, s, key).Id

	// The dashboard loads the record into its form...
	var form map[string]any
	s.Do(t, http.MethodGet, "/api/collections/api_keys/records/"+id, token, nil).JSON(t, &form)
	if form["banned_until"] != "" {
		t.Fatalf("loaded banned_until %v", form["banned_until"])
	}

	// ... meanwhile the key gets banned and rolled ...
	for {
		r := s.Do(t, http.MethodGet, "/v1/pets", key, nil)
		if strings.Contains(string(r.Body), "api_key_banned") {
			break
		}
	}
	newKey, _, err := apikeys.Roll(s.App, id, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	stored := keyRecord(t, s, newKey)

	// ... and staff save the form with a new name.
	form["name"] = "renamed shop"
	r := s.Do(t, http.MethodPatch, "/api/collections/api_keys/records/"+id, token, form)
	if r.StatusCode != http.StatusOK {
		t.Fatalf("save: %d %s", r.StatusCode, r.Body)
	}
	saved := keyRecord(t, s, newKey)
	if saved.GetString("name") != "renamed shop" {
		t.Errorf("name %q, want the edit", saved.GetString("name"))
	}
	for _, field := range apikeys.ServiceFields {
		if got, want := saved.GetString(field), stored.GetString(field); got != want {
			t.Errorf("%s %q after the save, want %q as stored", field, got, want)
		}
	}
	if apikeys.State(saved, time.Now()) != apikeys.StateBanned {
		t.Errorf("state %s, want banned", apikeys.State(saved, time.Now()))
	}
	r = s.Do(t, http.MethodGet, "/v1/pets", newKey, nil)
	expectError(t, r, http.StatusTooManyRequests, "api_key_banned")
}
