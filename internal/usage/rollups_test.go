package usage_test

import (
	"net/http"
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
