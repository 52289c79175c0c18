package hooks_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"petstore/internal/apikeys"
	"petstore/internal/apptest"
	"petstore/internal/audit"
)

// "New record" on api_keys in the dashboard says where keys are issued.
func TestDashboardCannotCreateKeys(t *testing.T) {
	s := apptest.Start(t, "")
	token := s.StaffToken(t)
	plan, err := s.App.FindFirstRecordByData("plans", "name", "free")
	if err != nil {
		t.Fatal(err)
	}
	// What the dashboard's form sends: every field, key_hash left empty.
	r := s.Do(t, http.MethodPost, "/api/collections/api_keys/records", token, map[string]any{
		"name": "shop", "plan": plan.Id, "key_hash": "", "prefix": "", "revoked": false, "expires": "",
		"per_minute": 0, "per_day": 0, "banned_until": "", "last_used": "",
	})
	var e struct {
		Message string `json:"message"`
	}
	r.JSON(t, &e)
	if r.StatusCode != http.StatusBadRequest || !strings.Contains(e.Message, "/staff/") ||
		!strings.Contains(e.Message, "petstore keys create") {
		t.Errorf("%d %s, want 400 naming /staff/ and petstore keys create", r.StatusCode, r.Body)
	}
	if n := s.CountRecords(t, apikeys.Collection); n != 0 {
		t.Errorf("%d keys stored", n)
	}
}

// A key form opened before a ban (or a roll) and saved later, as the
// dashboard sends it (every field as loaded), changes what staff edited and
// leaves the ban, the secrets and the counts as they are.
func TestStaleKeyFormKeepsBan(t *testing.T) {
	s := apptest.Start(t, "")
	token := s.StaffToken(t)
	key := s.NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 1, Name: "shop"})
	id := s.KeyRecord(t, key).Id

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
	newKey, _, err := apikeys.Roll(s.App, id, time.Hour, audit.CLI)
	if err != nil {
		t.Fatal(err)
	}
	stored := s.KeyRecord(t, newKey)

	// ... and staff save the form with a new name.
	form["name"] = "renamed shop"
	r := s.Do(t, http.MethodPatch, "/api/collections/api_keys/records/"+id, token, form)
	if r.StatusCode != http.StatusOK {
		t.Fatalf("save: %d %s", r.StatusCode, r.Body)
	}
	saved := s.KeyRecord(t, newKey)
	if saved.Name() != "renamed shop" {
		t.Errorf("name %q, want the edit", saved.Name())
	}
	serviceFields := []string{apikeys.HashField, apikeys.PrefixField, apikeys.PreviousHashField, apikeys.PreviousPrefixField,
		apikeys.PreviousUntilField, apikeys.BannedUntilField, apikeys.BanLiftedField, apikeys.LastUsedField, apikeys.ExpiresField}
	for _, field := range serviceFields {
		if got, want := saved.GetString(field), stored.GetString(field); got != want {
			t.Errorf("%s %q after the save, want %q as stored", field, got, want)
		}
	}
	if saved.State(time.Now()) != apikeys.StateBanned {
		t.Errorf("state %s, want banned", saved.State(time.Now()))
	}
	r = s.Do(t, http.MethodGet, "/v1/pets", newKey, nil)
	apptest.ExpectError(t, r, http.StatusTooManyRequests, "api_key_banned")
}

// The dashboard opens on what staff work with, and the fields say what they
// hold.
func TestDashboardCollections(t *testing.T) {
	s := apptest.Start(t, "")
	if _, err := s.App.FindCollectionByNameOrId("users"); err == nil {
		t.Errorf("PocketBase's default users collection is still there")
	}
	keys, err := s.App.FindCollectionByNameOrId(apikeys.Collection)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keys.Fields.FieldNames()[:7], []string{"id", "name", "plan", "prefix", "revoked", "banned_until", "last_used"}; !slices.Equal(got, want) {
		t.Errorf("api_keys columns start %v, want %v", got, want)
	}
	help := func(collection, field string) string {
		c, err := s.App.FindCollectionByNameOrId(collection)
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(c.Fields.GetByName(field))
		if err != nil {
			t.Fatal(err)
		}
		var f struct{ Help string }
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatal(err)
		}
		return f.Help
	}
	for _, c := range []struct{ collection, field, says string }{
		{"api_keys", "per_minute", "0 or empty: the plan's"},
		{"api_keys", "per_day", "0 or empty: the plan's"},
		{"api_keys", "revoked", "Revocation is final"},
		{"api_keys", "expires", "petstore keys expire ID"},
		{"api_keys", "banned_until", "petstore keys unban"},
		{"api_keys", "key_hash", "edits here are ignored"},
		{"api_key_usage", "limited", "requests minus limited"},
		{"plans", "ban_after", "0 means the per-minute quota"},
		{"plans", "ban_minutes", "0 disables bans"},
		{"pets", "categoryId", "from 1 to 9007199254740991"},
	} {
		if got := help(c.collection, c.field); !strings.Contains(got, c.says) {
			t.Errorf("%s.%s help %q does not say %q", c.collection, c.field, got, c.says)
		}
	}
}

// Staff revoke a key in the dashboard, whose form sends the whole record
// back; an edit of the hash itself is ignored, since it would orphan the key
// (see TestStaleKeyFormKeepsBan for the other fields the service writes).
func TestDashboardSaveKeepsTheKeyHash(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "free"})
	id := s.KeyRecord(t, key).Id
	token := s.StaffToken(t)
	path := "/api/collections/api_keys/records/" + id

	r := s.Do(t, http.MethodPatch, path, "", map[string]any{apikeys.HashField: strings.Repeat("0", 64)}, "Authorization", token)
	if r.StatusCode != http.StatusOK || s.KeyRecord(t, key).Id != id {
		t.Fatalf("editing the hash: %d %s; want 200 with the hash unchanged", r.StatusCode, r.Body)
	}
	if r := s.Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != http.StatusOK {
		t.Fatalf("key after the refused edit: %d", r.StatusCode)
	}

	var record map[string]any
	s.Do(t, http.MethodGet, path, "", nil, "Authorization", token).JSON(t, &record)
	record["revoked"] = true
	if r := s.Do(t, http.MethodPatch, path, "", record, "Authorization", token); r.StatusCode != http.StatusOK {
		t.Fatalf("revoking with the whole record: %d %s", r.StatusCode, r.Body)
	}
	s.Do(t, http.MethodGet, "/v1/pets", key, nil).Error(t, http.StatusUnauthorized)
}
