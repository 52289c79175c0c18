package usage_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/internal/apikeys"
	"petstore/internal/usage"
	"petstore/testkit/apptest"
)

// The dashboard's usage_rollups shows usage_hours read-only: a superuser
// lists its rows, with each key's customer, through PocketBase's records
// API; a guest and an API key see nothing; no one, a superuser included,
// creates, changes or deletes a row.
func TestUsageRollupsReadOnlyForSuperusers(t *testing.T) {
	s := apptest.Start(t, "")
	token := s.SuperuserToken(t, "staff@example.com", "a long enough password")
	id := keyID(t, s)
	r := start(t, s, 0)
	at := time.Date(2026, 12, 7, 10, 30, 0, 0, time.UTC)
	for range 3 {
		r.Record(id, "listPets", at, usage.Served)
	}
	r.Record(id, "getPet", at, usage.Refused)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	const records = "/api/collections/usage_rollups/records"
	var list struct {
		TotalItems int `json:"totalItems"`
		Items      []struct {
			ID        string `json:"id"`
			APIKey    string `json:"api_key"`
			Customer  string `json:"customer"`
			Hour      string `json:"hour"`
			Operation string `json:"operation"`
			Outcome   string `json:"outcome"`
			Requests  int64  `json:"requests"`
		} `json:"items"`
	}
	got := s.Do(t, http.MethodGet, records+"?sort=operation", token, nil)
	if got.StatusCode != http.StatusOK {
		t.Fatalf("a superuser lists usage_rollups: %d %s", got.StatusCode, got.Body)
	}
	got.JSON(t, &list)
	if list.TotalItems != 2 || list.Items[0].Operation != "getPet" || list.Items[0].Requests != 1 ||
		list.Items[1].Requests != 3 || list.Items[1].APIKey != id || list.Items[1].Hour != "2026-12-07 10:00:00.000Z" {
		t.Errorf("usage_rollups as a superuser lists it: %s", got.Body)
	}

	for name, who := range map[string]string{"a guest": "", "an API key": s.NewKey(t, apikeys.NewKey{Name: "shop"})} {
		if got := s.Do(t, http.MethodGet, records, who, nil); got.StatusCode != http.StatusForbidden {
			t.Errorf("%s lists usage_rollups: %d %s, want 403", name, got.StatusCode, got.Body)
		}
	}
	row := map[string]any{"api_key": id, "hour": "2026-12-07 11:00:00.000Z", "operation": "listPets", "outcome": "served", "requests": 5}
	if got := s.Do(t, http.MethodPost, records, token, row); got.StatusCode != http.StatusBadRequest {
		t.Errorf("a superuser creates a usage_rollups row: %d %s, want 400", got.StatusCode, got.Body)
	}
	if got := s.Do(t, http.MethodPatch, records+"/"+list.Items[0].ID, token, map[string]any{"requests": 100}); got.StatusCode != http.StatusBadRequest {
		t.Errorf("a superuser changes a usage_rollups row: %d %s, want 400", got.StatusCode, got.Body)
	}
	if n := s.CountRecords(t, usage.Collection); n != 2 {
		t.Errorf("usage_hours has %d rows after the refused writes, want 2", n)
	}
}

// The counts in usage_hours, and the thresholds told of in
// usage_thresholds, are the service's: a superuser's create, update and
// delete through PocketBase's records API (the dashboard's) are refused
// with 403 saying why, by the collection's name or its id, and so are
// emptying and renaming the collections; the rows stay as counted.
func TestUsageCountsChangeByTheServiceOnly(t *testing.T) {
	s := apptest.Start(t, "")
	token := s.SuperuserToken(t, "staff@example.com", "a long enough password")
	id := keyID(t, s)
	r := start(t, s, 0)
	at := time.Date(2026, 12, 7, 10, 30, 0, 0, time.UTC)
	r.Record(id, "listPets", at, usage.Served)
	r.Record(id, "listPets", at, usage.Served)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	hours, err := s.App.FindCollectionByNameOrId(usage.Collection)
	if err != nil {
		t.Fatal(err)
	}
	var rowID string
	if err := s.App.DB().Select("id").From(usage.Collection).Row(&rowID); err != nil {
		t.Fatal(err)
	}
	refused := func(what string, got *apptest.Response) {
		t.Helper()
		if got.StatusCode != http.StatusForbidden || !strings.Contains(string(got.Body), "service") {
			t.Errorf("%s: %d %s, want 403 saying the service writes them", what, got.StatusCode, got.Body)
		}
	}
	row := map[string]any{"api_key": id, "hour": "2026-12-07 11:00:00.000Z", "operation": "listPets", "outcome": "served", "requests": 5}
	for _, c := range []string{usage.Collection, hours.Id} {
		records := "/api/collections/" + c + "/records"
		refused("a superuser creates a row of "+c, s.Do(t, http.MethodPost, records, token, row))
		refused("a superuser changes a row of "+c, s.Do(t, http.MethodPatch, records+"/"+rowID, token, map[string]any{"requests": 100}))
		refused("a superuser deletes a row of "+c, s.Do(t, http.MethodDelete, records+"/"+rowID, token, nil))
	}
	refused("a superuser adds a threshold told of", s.Do(t, http.MethodPost, "/api/collections/"+usage.ThresholdsCollection+"/records", token,
		map[string]any{"api_key": id, "day": "2026-12-07", "threshold": 80}))
	refused("a superuser empties usage_hours", s.Do(t, http.MethodDelete, "/api/collections/"+usage.Collection+"/truncate", token, nil))
	refused("a superuser renames usage_hours", s.Do(t, http.MethodPatch, "/api/collections/"+usage.Collection, token, map[string]any{"name": "hours"}))

	var requests int64
	if err := s.App.DB().NewQuery("SELECT requests FROM " + usage.Collection + " WHERE id = {:id}").Bind(map[string]any{"id": rowID}).Row(&requests); err != nil || requests != 2 {
		t.Errorf("the row after the refused writes: %d requests (%v), want 2", requests, err)
	}
	if n := s.CountRecords(t, usage.Collection); n != 1 {
		t.Errorf("usage_hours has %d rows after the refused writes, want 1", n)
	}
	if n := s.CountRecords(t, usage.ThresholdsCollection); n != 0 {
		t.Errorf("usage_thresholds has %d rows after the refused write, want 0", n)
	}
}
