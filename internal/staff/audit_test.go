package staff_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pocketbase/dbx"

	"petstore/internal/audit"
)

// auditRow is a record of audit_log.
type auditRow struct {
	ID         string `db:"id"`
	Action     string `db:"action"`
	Key        string `db:"key"`
	Actor      string `db:"actor"`
	ActorEmail string `db:"actor_email"`
	Address    string `db:"address"`
	Details    string `db:"details"`
}

// auditRows is the trail's records of the API key key, oldest first.
func auditRows(t *testing.T, s *staffServer, key string) []auditRow {
	t.Helper()
	return auditRowsWhere(t, s, "key", key)
}

// auditRowsWhere is the trail's records whose field is id, oldest first.
func auditRowsWhere(t *testing.T, s *staffServer, field, id string) []auditRow {
	t.Helper()
	var rows []auditRow
	err := s.App.DB().Select("id", "action", "key", "actor", "actor_email", "address", "details").
		From(audit.Collection).Where(dbx.HashExp{field: id}).OrderBy("rowid").All(&rows)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestStaffChangesAreAudited: each change through the staff API, and a
// dashboard save, leaves one audit record, with the superuser, its address
// and the values; a refused change leaves none; and nobody, a superuser
// included, can create, change or delete a record through the records API.
func TestStaffChangesAreAudited(t *testing.T) {
	s := start(t)
	var k key
	s.call(t, http.MethodPost, "/keys", map[string]any{"name": "shop", "plan": "free"}, http.StatusCreated, &k)
	s.call(t, http.MethodPatch, "/keys/"+k.ID, map[string]any{"plan": "pro"}, http.StatusOK, nil)
	s.call(t, http.MethodPatch, "/keys/"+k.ID, map[string]any{"expires": time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)}, http.StatusOK, nil)
	s.call(t, http.MethodPost, "/keys/"+k.ID+"/roll", map[string]any{"graceSeconds": 60}, http.StatusCreated, nil)

	// The dashboard's save of the record (the records API), here of its
	// per-day quota: audited as the same superuser.
	records := "/api/collections/" + audit.Collection + "/records"
	if r := s.Do(t, http.MethodPatch, "/api/collections/api_keys/records/"+k.ID, s.token, map[string]any{"per_day": 500}); r.StatusCode != http.StatusOK {
		t.Fatalf("dashboard save: %d %s", r.StatusCode, r.Body)
	}
	s.call(t, http.MethodPost, "/keys/"+k.ID+"/revoke", nil, http.StatusOK, nil)
	s.call(t, http.MethodPost, "/keys/"+k.ID+"/roll", map[string]any{"graceSeconds": 0}, http.StatusConflict, nil) // revoked: refused

	rows := auditRows(t, s, k.ID)
	want := []audit.Action{audit.KeyCreated, audit.KeyQuotaChanged, audit.KeyExpiryChanged, audit.KeyRolled, audit.KeyQuotaChanged, audit.KeyRevoked}
	if len(rows) != len(want) {
		t.Fatalf("%d audit records, want %d: %+v", len(rows), len(want), rows)
	}
	superuser, err := s.App.FindAuthRecordByEmail("_superusers", "staff@example.com")
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		if r.Action != string(want[i]) || r.Actor != superuser.Id || r.ActorEmail != "staff@example.com" || r.Address != "127.0.0.1" {
			t.Errorf("record %d: %+v, want %s by %s from 127.0.0.1", i, r, want[i], superuser.Id)
		}
	}
	if rows[1].Details != `{"plan":{"new":"`+planID(t, s, "pro")+`","old":"`+planID(t, s, "free")+`"}}` {
		t.Errorf("quota change details: %s", rows[1].Details)
	}

	if rows[4].Details != `{"per_day":{"new":"500","old":"0"}}` {
		t.Errorf("dashboard save details: %s", rows[4].Details)
	}

	// Append-only, for superusers too.
	if r := s.Do(t, http.MethodPatch, records+"/"+rows[0].ID, s.token, map[string]any{"actor": "someone"}); r.StatusCode != http.StatusForbidden {
		t.Errorf("a superuser's update of an audit record: %d %s, want 403", r.StatusCode, r.Body)
	}
	if r := s.Do(t, http.MethodDelete, records+"/"+rows[0].ID, s.token, nil); r.StatusCode != http.StatusForbidden {
		t.Errorf("a superuser's delete of an audit record: %d %s, want 403", r.StatusCode, r.Body)
	}
	if r := s.Do(t, http.MethodPost, records, s.token, map[string]any{"action": "key.revoked", "key": k.ID, "actor": "x"}); r.StatusCode != http.StatusForbidden {
		t.Errorf("a superuser's create of an audit record: %d %s, want 403", r.StatusCode, r.Body)
	}
	if r := s.Do(t, http.MethodGet, records+"/"+rows[0].ID, s.token, nil); r.StatusCode != http.StatusOK {
		t.Errorf("a superuser's read of an audit record: %d %s", r.StatusCode, r.Body)
	}
	record, err := s.App.FindRecordById(audit.Collection, rows[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.App.Delete(record); err == nil {
		t.Error("the app deleted an audit record")
	}
	// Nor is the collection changed, emptied or deleted in the dashboard.
	collection := "/api/collections/" + audit.Collection
	for _, c := range []struct{ method, path string }{
		{http.MethodPatch, collection},
		{http.MethodDelete, collection + "/truncate"},
		{http.MethodDelete, collection},
	} {
		var body any
		if c.method == http.MethodPatch {
			body = map[string]any{"listRule": "", "name": "audit_log_old"}
		}
		if r := s.Do(t, c.method, c.path, s.token, body); r.StatusCode < 400 {
			t.Errorf("%s %s by a superuser: %d %s, want refused", c.method, c.path, r.StatusCode, r.Body)
		}
	}
	if c, err := s.App.FindCollectionByNameOrId(audit.Collection); err != nil || c.ListRule != nil {
		t.Errorf("the collection after the refusals: %v, %v", c, err)
	}
	if len(auditRows(t, s, k.ID)) != len(want) {
		t.Error("the trail changed")
	}

	// The staff page reads a key's history, newest first, a page at a time.
	var history struct {
		Page, PerPage, TotalItems, TotalPages int
		Items                                 []struct {
			ID, Action, Actor, ActorEmail, Address string
			Details                                map[string]any
			Created                                time.Time
		}
	}
	s.call(t, http.MethodGet, "/keys/"+k.ID+"/history?perPage=4", nil, http.StatusOK, &history)
	if history.Page != 1 || history.PerPage != 4 || history.TotalItems != len(want) || history.TotalPages != 2 || len(history.Items) != 4 {
		t.Fatalf("history: %+v", history)
	}
	for i, item := range history.Items {
		w := rows[len(rows)-1-i]
		if item.ID != w.ID || item.Action != w.Action || item.Actor != superuser.Id || item.ActorEmail != "staff@example.com" ||
			item.Address != "127.0.0.1" || time.Since(item.Created) > time.Minute {
			t.Errorf("history item %d: %+v, want record %+v", i, item, w)
		}
	}
	if d, _ := history.Items[1].Details["per_day"].(map[string]any); d["old"] != "0" || d["new"] != "500" {
		t.Errorf("the dashboard save's details: %v", history.Items[1].Details)
	}
	s.call(t, http.MethodGet, "/keys/"+k.ID+"/history?perPage=4&page=2", nil, http.StatusOK, &history)
	if len(history.Items) != 2 || history.Items[1].Action != string(audit.KeyCreated) {
		t.Errorf("history's last page: %+v", history.Items)
	}
	for path, status := range map[string]int{
		"/keys/nosuchkey000000/history":                  http.StatusNotFound,
		"/keys/" + k.ID + "/history?page=0":              http.StatusBadRequest,
		"/keys/" + k.ID + "/history?perPage=101":         http.StatusBadRequest,
		"/keys/" + k.ID + "/history?perPage=1&perPage=2": http.StatusBadRequest,
	} {
		s.call(t, http.MethodGet, path, nil, status, nil)
	}
}

func planID(t *testing.T, s *staffServer, name string) string {
	t.Helper()
	plan, err := s.App.FindFirstRecordByData("plans", "name", name)
	if err != nil {
		t.Fatal(err)
	}
	return plan.Id
}

// TestWebhookChangesAreAudited: each change of an endpoint through the staff
// API leaves one audit record, with the superuser, its address and the
// values (never a secret); a change that changes nothing and a refused one
// leave none; the records outlive the endpoint; and the staff page reads
// them, newest first, a page at a time.
func TestWebhookChangesAreAudited(t *testing.T) {
	s := startWithWebhooks(t)
	rcv := newHookReceiver(t)
	id, first := s.addEndpoint(t, rcv.URL, "pet.created")
	base := "/webhooks/" + id
	s.call(t, http.MethodPatch, base, map[string]any{"events": []string{"pet.created", "key.created"}, "description": "shop"}, http.StatusOK, nil)
	s.call(t, http.MethodPatch, base, map[string]any{"description": "shop"}, http.StatusOK, nil) // no change: no record
	s.call(t, http.MethodPatch, base, map[string]any{"url": "gopher://x"}, http.StatusBadRequest, nil)
	s.call(t, http.MethodPatch, base, map[string]any{"paused": true}, http.StatusOK, nil)
	s.call(t, http.MethodPatch, base, map[string]any{"paused": false}, http.StatusOK, nil)
	var rolled struct{ Secret string }
	s.call(t, http.MethodPost, base+"/roll", map[string]any{"graceSeconds": 60}, http.StatusOK, &rolled)
	s.call(t, http.MethodPost, base+"/test", nil, http.StatusAccepted, nil)
	rcv.waitFor(t, "webhook.test")
	waitRecordedDelivered(t, s, 1)
	if _, err := s.App.DB().NewQuery("UPDATE webhook_events SET status = 'failed', attempts = 9").Execute(); err != nil {
		t.Fatal(err)
	}
	var event struct {
		ID        string `db:"id"`
		WebhookID string `db:"webhook_id"`
	}
	if err := s.App.DB().NewQuery("SELECT id, webhook_id FROM webhook_events").One(&event); err != nil {
		t.Fatal(err)
	}
	s.call(t, http.MethodPost, base+"/events/"+event.ID+"/resend", nil, http.StatusAccepted, nil)
	rcv.waitFor(t, "webhook.test", "webhook.test")
	s.call(t, http.MethodPost, base+"/events/"+event.ID+"/resend", nil, http.StatusNotFound, nil) // delivered: refused
	s.call(t, http.MethodDelete, base, nil, http.StatusNoContent, nil)

	want := []audit.Action{audit.WebhookCreated, audit.WebhookChanged, audit.WebhookChanged, audit.WebhookChanged,
		audit.WebhookSecretRolled, audit.WebhookTestSent, audit.WebhookEventResent, audit.WebhookDeleted}
	rows := auditRowsWhere(t, s, audit.WebhookField, id)
	if len(rows) != len(want) {
		t.Fatalf("%d audit records, want %d: %+v", len(rows), len(want), rows)
	}
	superuser, err := s.App.FindAuthRecordByEmail("_superusers", "staff@example.com")
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		if r.Action != string(want[i]) || r.Key != "" || r.Actor != superuser.Id || r.ActorEmail != "staff@example.com" || r.Address != "127.0.0.1" {
			t.Errorf("record %d: %+v, want %s by %s from 127.0.0.1", i, r, want[i], superuser.Id)
		}
		for _, secret := range []string{first, rolled.Secret, "whsec_"} {
			if strings.Contains(r.Details, secret) {
				t.Errorf("record %d holds a secret: %s", i, r.Details)
			}
		}
	}
	for i, details := range map[int]string{
		0: `{"description":"","events":["pet.created"],"paused":false,"url":"` + rcv.URL + `"}`,
		1: `{"description":{"new":"shop","old":""},"events":{"new":["pet.created","key.created"],"old":["pet.created"]}}`,
		2: `{"paused":{"new":true,"old":false}}`,
		3: `{"paused":{"new":false,"old":true}}`,
		5: `null`,
		6: `{"event":"` + event.ID + `","type":"webhook.test","webhook_id":"` + event.WebhookID + `"}`,
		7: `{"description":"shop","events":["pet.created","key.created"],"paused":false,"url":"` + rcv.URL + `"}`,
	} {
		if rows[i].Details != details {
			t.Errorf("%s details: %s, want %s", rows[i].Action, rows[i].Details, details)
		}
	}
	var roll map[string]string
	if err := json.Unmarshal([]byte(rows[4].Details), &roll); err != nil || len(roll) != 1 {
		t.Errorf("roll details: %s", rows[4].Details)
	} else if until, err := time.Parse("2006-01-02 15:04:05.000Z", roll["previous_until"]); err != nil || time.Until(until) < 50*time.Second || time.Until(until) > time.Minute {
		t.Errorf("roll details: %s, want the grace's end a minute from now", rows[4].Details)
	}

	// The deleted endpoint's history is still read, newest first.
	var history struct {
		Page, PerPage, TotalItems, TotalPages int
		Items                                 []struct {
			ID, Action, Actor, ActorEmail, Address string
			Details                                map[string]any
			Created                                time.Time
		}
	}
	s.call(t, http.MethodGet, base+"/history?perPage=5", nil, http.StatusOK, &history)
	if history.Page != 1 || history.PerPage != 5 || history.TotalItems != len(want) || history.TotalPages != 2 || len(history.Items) != 5 {
		t.Fatalf("history: %+v", history)
	}
	for i, item := range history.Items {
		w := rows[len(rows)-1-i]
		if item.ID != w.ID || item.Action != w.Action || item.Actor != superuser.Id || item.ActorEmail != "staff@example.com" ||
			item.Address != "127.0.0.1" || time.Since(item.Created) > time.Minute {
			t.Errorf("history item %d: %+v, want record %+v", i, item, w)
		}
	}
	s.call(t, http.MethodGet, base+"/history?perPage=5&page=2", nil, http.StatusOK, &history)
	if len(history.Items) != 3 || history.Items[2].Action != string(audit.WebhookCreated) {
		t.Errorf("history's last page: %+v", history.Items)
	}
	for path, status := range map[string]int{
		"/webhooks/nosuchendpoint0/history":   http.StatusNotFound,
		base + "/history?page=0":              http.StatusBadRequest,
		base + "/history?perPage=101":         http.StatusBadRequest,
		base + "/history?perPage=1&perPage=2": http.StatusBadRequest,
	} {
		s.call(t, http.MethodGet, path, nil, status, nil)
	}
}
