package hooks_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/testkit/apptest"
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

// A key form opened before a roll and a use and saved later, as the
// dashboard sends it (every field as loaded), changes what staff edited and
// leaves the secrets and the counts as they are. Opened before a ban and
// saved while the key is banned, it is refused with the ban and how to lift
// it (clearing banned_until is not the way), and changes nothing; reloaded,
// it saves.
func TestStaleKeyFormKeepsBan(t *testing.T) {
	s := apptest.Start(t, "")
	token := s.StaffToken(t)
	key := s.NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 1, Name: "shop"})
	id := s.KeyRecord(t, key).Id
	path := "/api/collections/api_keys/records/" + id
	load := func() map[string]any {
		var form map[string]any
		s.Do(t, http.MethodGet, path, token, nil).JSON(t, &form)
		return form
	}

	// The dashboard loads the record into its form...
	form := load()
	if form["banned_until"] != "" {
		t.Fatalf("loaded banned_until %v", form["banned_until"])
	}
	// ... meanwhile the key is used and rolled ...
	s.Do(t, http.MethodGet, "/v1/pets", key, nil)
	// The use is recorded off the request path: wait for it, so that the
	// record read below as stored holds it.
	for deadline := time.Now().Add(5 * time.Second); s.KeyRecord(t, key).GetString(apikeys.LastUsedField) == ""; {
		if time.Now().After(deadline) {
			t.Fatal("the key's use was not recorded in 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	newKey, _, err := apikeys.Roll(s.App, id, time.Hour, audit.CLI)
	if err != nil {
		t.Fatal(err)
	}
	stored := s.KeyRecord(t, newKey)
	// ... and staff save the form with a new name.
	form["name"] = "renamed shop"
	if r := s.Do(t, http.MethodPatch, path, token, form); r.StatusCode != http.StatusOK {
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

	// Another form, opened before a ban and saved during it.
	form = load()
	for {
		r := s.Do(t, http.MethodGet, "/v1/pets", newKey, nil)
		if strings.Contains(string(r.Body), "api_key_banned") {
			break
		}
	}
	form["name"] = "shop again"
	r := s.Do(t, http.MethodPatch, path, token, form)
	if r.StatusCode != http.StatusConflict || !strings.Contains(string(r.Body), "petstore keys unban "+id) || !strings.Contains(string(r.Body), "reload it") {
		t.Fatalf("a stale form saved during a ban: %d %s; want 409 saying how to lift the ban", r.StatusCode, r.Body)
	}
	if k := s.KeyRecord(t, newKey); k.Name() != "renamed shop" || k.State(time.Now()) != apikeys.StateBanned {
		t.Errorf("after the refused save: name %q, state %s; want them unchanged", k.Name(), k.State(time.Now()))
	}
	form = load()
	form["name"] = "shop again"
	if r := s.Do(t, http.MethodPatch, path, token, form); r.StatusCode != http.StatusOK {
		t.Fatalf("the reloaded form: %d %s", r.StatusCode, r.Body)
	}
	if k := s.KeyRecord(t, newKey); k.Name() != "shop again" || k.State(time.Now()) != apikeys.StateBanned {
		t.Errorf("after the reloaded save: name %q, state %s; want the new name, still banned", k.Name(), k.State(time.Now()))
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
		{"api_keys", "key_hash", "a save here that changes it is refused"},
		{"api_keys", "prefix", "a save here that changes it is refused"},
		{"api_keys", "scopes", "a save here that changes them is refused"},
		{"usage_hours", "outcome", "A day window counts every outcome but limited"},
		{"plans", "ban_after", "0 means the per-minute quota"},
		{"plans", "ban_minutes", "0 disables bans"},
		{"pets", "categoryId", "from 1 to 9007199254740991"},
		{"pets", "categoryId", "named in the categories collection"},
	} {
		if got := help(c.collection, c.field); !strings.Contains(got, c.says) {
			t.Errorf("%s.%s help %q does not say %q", c.collection, c.field, got, c.says)
		}
	}
}

// Staff revoke a key in the dashboard, whose form sends the whole record
// back. A save that changes a field only the service writes is refused, with
// the field and what to do instead, and changes nothing: no save reports
// success and drops what staff typed.
func TestDashboardRefusesServiceFieldEdits(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "free", Name: "shop"})
	id := s.KeyRecord(t, key).Id
	token := s.StaffToken(t)
	path := "/api/collections/api_keys/records/" + id
	load := func() map[string]any {
		var form map[string]any
		s.Do(t, http.MethodGet, path, "", nil, "Authorization", token).JSON(t, &form)
		return form
	}

	future := time.Now().Add(48 * time.Hour).UTC().Format("2006-01-02 15:04:05.000Z")
	for _, c := range []struct {
		field string
		value any
		says  string
	}{
		{apikeys.HashField, strings.Repeat("0", 64), "Roll the key"},
		{apikeys.PrefixField, "pet_mine", "is the start of the key's secret; it cannot be changed here"},
		{apikeys.PreviousPrefixField, "pet_old", "written by a roll"},
		{apikeys.ExpiresField, future, "petstore keys expire ID"},
		{apikeys.ScopesField, []string{"pets:read"}, "change them on the staff page"},
		{apikeys.LastUsedField, future, "written by the service on the key's use"},
		{apikeys.BannedUntilField, future, "are set by the rate limiter"},
		{apikeys.BanLiftedField, future, "written when a ban is lifted"},
	} {
		before := s.KeyRecord(t, key).GetString(c.field)
		for how, body := range map[string]map[string]any{"the whole form": load(), "the field alone": {}} {
			body["name"] = "renamed"
			body[c.field] = c.value
			r := s.Do(t, http.MethodPatch, path, "", body, "Authorization", token)
			var answer struct {
				Message string
				Data    map[string]struct{ Message string }
			}
			r.JSON(t, &answer)
			if r.StatusCode != http.StatusBadRequest || !strings.Contains(answer.Message, c.says) || !strings.Contains(answer.Data[c.field].Message, c.says) {
				t.Errorf("%s changed with %s: %d %s; want 400 saying %q under data.%s", c.field, how, r.StatusCode, r.Body, c.says, c.field)
			}
			k := s.KeyRecord(t, key)
			if k.Name() != "shop" || k.GetString(c.field) != before {
				t.Errorf("%s changed with %s: the refused save changed the key: name %q, %s %q", c.field, how, k.Name(), c.field, k.GetString(c.field))
			}
		}
	}
	if r := s.Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != http.StatusOK {
		t.Fatalf("key after the refused edits: %d", r.StatusCode)
	}

	// The whole form with what staff may change: saved.
	form := load()
	form["name"], form["revoked"] = "closed shop", true
	if r := s.Do(t, http.MethodPatch, path, "", form, "Authorization", token); r.StatusCode != http.StatusOK {
		t.Fatalf("revoking with the whole record: %d %s", r.StatusCode, r.Body)
	}
	s.Do(t, http.MethodGet, "/v1/pets", key, nil).Error(t, http.StatusUnauthorized)
}
