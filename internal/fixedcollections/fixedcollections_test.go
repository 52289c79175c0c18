package fixedcollections_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/internal/categories"
	"petstore/internal/customers"
	"petstore/internal/pets"
	"petstore/internal/webhooks"
	"petstore/testkit/apptest"
)

// An import of collections (the dashboard's Settings, Import collections)
// may hold the audit trail's and the webhooks' collections as they are, as
// an export of every collection does, but not change them, nor delete them
// as missing: the trail and the outbox would go past their own guards.
func TestCollectionsImportKeepsTheFixedOnes(t *testing.T) {
	s := apptest.Start(t, "")
	s.NewKey(t, apikeys.NewKey{}) // a record in the trail
	token := s.StaffToken(t)
	var list struct {
		Items []map[string]any `json:"items"`
	}
	s.Do(t, http.MethodGet, "/api/collections?perPage=500", "", nil, "Authorization", token).JSON(t, &list)
	var all, withoutTrail []map[string]any
	for _, c := range list.Items {
		if c["system"] == true {
			continue // PocketBase's own, which it keeps itself
		}
		all = append(all, c)
		if c["name"] != audit.Collection {
			withoutTrail = append(withoutTrail, c)
		}
	}
	importing := func(collections []map[string]any, deleteMissing bool) int {
		t.Helper()
		return s.Do(t, http.MethodPut, "/api/collections/import", "",
			map[string]any{"collections": collections, "deleteMissing": deleteMissing}, "Authorization", token).StatusCode
	}

	if got := importing(all, false); got != http.StatusNoContent {
		t.Errorf("the export imported back as it is: %d, want 204", got)
	}
	if got := importing(withoutTrail, true); got != http.StatusForbidden {
		t.Errorf("an import deleting the audit trail as missing: %d, want 403", got)
	}
	for _, c := range all {
		if c["name"] == audit.Collection || c["name"] == "webhook_endpoints" {
			c["listRule"] = "" // anyone may list it
			if got := importing([]map[string]any{c}, false); got != http.StatusForbidden {
				t.Errorf("an import opening %s to anyone: %d, want 403", c["name"], got)
			}
		}
	}
	if n := s.CountRecords(t, audit.Collection); n == 0 {
		t.Errorf("the audit trail is empty")
	}
	trail, err := s.App.FindCollectionByNameOrId(audit.Collection)
	if err != nil || trail.ListRule != nil && *trail.ListRule == "" {
		t.Errorf("the audit trail's collection after the refused imports: %v, list rule %v", err, trail.ListRule)
	}
}

// The collections the service relies on are fixed for superusers too: no
// rename, no change of rules, fields or indexes, no emptying, no deletion,
// through the collections API, its truncate route or the import, by name
// or by id. Each refusal is a 403 that says why.
func TestFixedCollectionsStayFixed(t *testing.T) {
	s := apptest.Start(t, "")
	s.NewKey(t, apikeys.NewKey{}) // a key, a plan in use and a record in the trail
	superuser := s.StaffToken(t)
	for _, name := range []string{apikeys.Collection, apikeys.PlansCollection, audit.Collection, pets.Collection, categories.Collection, customers.Collection,
		webhooks.EndpointsCollection, webhooks.EventsCollection, webhooks.AttemptsCollection} {
		t.Run(name, func(t *testing.T) {
			c, err := s.App.FindCollectionByNameOrId(name)
			if err != nil {
				t.Fatal(err)
			}
			// The record hooks are bound by this id too.
			if c.Id != core.NewBaseCollection(name).Id {
				t.Errorf("%s's id is %s, not the one its migration derives (%s)", name, c.Id, core.NewBaseCollection(name).Id)
			}
			records := s.CountRecords(t, name)
			var exported map[string]any
			s.Do(t, http.MethodGet, "/api/collections/"+name, superuser, nil).JSON(t, &exported)
			changedFields := append([]any{}, exported["fields"].([]any)...)
			changedFields = append(changedFields, map[string]any{"name": "extra", "type": "text"})
			// PocketBase finds a collection by its name in any letter case,
			// the Kelvin sign's K included.
			other := strings.ToUpper(name)
			if strings.Contains(name, "k") {
				other = strings.Replace(name, "k", "\u212A", 1)
			}
			for _, ref := range []string{name, c.Id, other} {
				for _, change := range []map[string]any{
					{"name": name + "_renamed"},
					{"listRule": ""},
					{"updateRule": "@request.auth.id != ''"},
					{"fields": changedFields},
					{"indexes": []string{}},
				} {
					r := s.Do(t, http.MethodPatch, "/api/collections/"+ref, superuser, change)
					refused(t, r, "PATCH "+ref+" "+string(mustJSON(change)))
				}
				refused(t, s.Do(t, http.MethodDelete, "/api/collections/"+ref+"/truncate", superuser, nil), "truncate "+ref)
				refused(t, s.Do(t, http.MethodDelete, "/api/collections/"+ref, superuser, nil), "DELETE "+ref)
			}
			imported := map[string]any{}
			for k, v := range exported {
				imported[k] = v
			}
			imported["name"] = name + "_renamed"
			r := s.Do(t, http.MethodPut, "/api/collections/import", superuser,
				map[string]any{"collections": []any{imported}, "deleteMissing": false})
			refused(t, r, "an import renaming it")
			// An entry without an id that names it in another letter case
			// is the collection for PocketBase's import.
			for _, named := range []string{strings.ToUpper(name), other} {
				r = s.Do(t, http.MethodPut, "/api/collections/import", superuser,
					map[string]any{"collections": []any{map[string]any{"name": named, "listRule": ""}}, "deleteMissing": false})
				refused(t, r, "an import naming it "+named)
			}

			after, err := s.App.FindCollectionByNameOrId(c.Id)
			if err != nil || after.Name != name || after.ListRule != nil || len(after.Fields) != len(c.Fields) ||
				len(after.Indexes) != len(c.Indexes) {
				t.Errorf("the collection after the refusals: %v %+v", err, after)
			}
			if n := s.CountRecords(t, name); n != records {
				t.Errorf("%d records after the refusals, want %d", n, records)
			}
		})
	}
	// A collection of staff's own still changes and empties.
	if r := s.Do(t, http.MethodPost, "/api/collections", superuser, map[string]any{"name": "notes", "type": "base",
		"fields": []any{map[string]any{"name": "text", "type": "text"}}}); r.StatusCode != http.StatusOK {
		t.Fatalf("create notes: %d %s", r.StatusCode, r.Body)
	}
	if r := s.Do(t, http.MethodPatch, "/api/collections/NOTES", superuser, map[string]any{"listRule": ""}); r.StatusCode != http.StatusOK {
		t.Errorf("a change of notes: %d %s", r.StatusCode, r.Body)
	}
	if r := s.Do(t, http.MethodDelete, "/api/collections/notes/truncate", superuser, nil); r.StatusCode != http.StatusNoContent {
		t.Errorf("truncate notes: %d %s", r.StatusCode, r.Body)
	}
}

// refused checks that r is the 403 of a fixed collection, with a message
// that says so.
func refused(t *testing.T, r *apptest.Response, what string) {
	t.Helper()
	var body struct{ Message string }
	_ = json.Unmarshal(r.Body, &body)
	if r.StatusCode != http.StatusForbidden || !strings.Contains(body.Message, "cannot be renamed, changed, emptied or deleted") {
		t.Errorf("%s: %d %s, want 403 saying the collection is fixed", what, r.StatusCode, r.Body)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// The attack of issue 36: rename api_keys, lift a revocation and widen the
// key under the new name, where hooks bound by name would not see it, and
// rename it back. The rename is refused; so is every way around it; the key
// stays revoked and the trail holds only what happened.
func TestRenamingKeysCannotUndoARevocation(t *testing.T) {
	s := apptest.Start(t, "")
	superuser := s.StaffToken(t)
	key := s.NewKey(t, apikeys.NewKey{Name: "reader", Scopes: []apikeys.Scope{apikeys.Scopes[0]}})
	id := s.KeyRecord(t, key).Id
	if r := s.Do(t, http.MethodPost, "/api/petstore/keys/"+id+"/revoke", superuser, nil); r.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %d %s", r.StatusCode, r.Body)
	}
	trail := s.CountRecords(t, audit.Collection)

	refused(t, s.Do(t, http.MethodPatch, "/api/collections/api_keys", superuser, map[string]any{"name": "k2"}), "the rename")
	widen := map[string]any{"revoked": "", "scopes": apikeys.ScopeNames(apikeys.Scopes), "per_minute": 1e9}
	if r := s.Do(t, http.MethodPatch, "/api/collections/k2/records/"+id, superuser, widen); r.StatusCode != http.StatusNotFound {
		t.Errorf("PATCH under the refused name: %d %s, want 404", r.StatusCode, r.Body)
	}
	keys, err := s.App.FindCollectionByNameOrId(apikeys.Collection)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/api/collections/api_keys/records/" + id, "/api/collections/" + keys.Id + "/records/" + id} {
		if r := s.Do(t, http.MethodPatch, path, superuser, widen); r.StatusCode != http.StatusBadRequest {
			t.Errorf("PATCH %s: %d %s, want 400", path, r.StatusCode, r.Body)
		}
	}
	r := s.Do(t, http.MethodPost, "/api/batch", superuser, map[string]any{"requests": []map[string]any{
		{"method": http.MethodPatch, "url": "/api/collections/" + keys.Id + "/records/" + id, "body": widen}}})
	if r.StatusCode < 400 {
		t.Errorf("the batch API's PATCH: %d %s, want refused", r.StatusCode, r.Body)
	}

	if r := s.Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("the revoked key on /v1: %d %s", r.StatusCode, r.Body)
	}
	k := s.KeyRecord(t, key)
	if !k.Revoked() || k.PerMinute() != 0 || len(k.Scopes()) != 1 {
		t.Errorf("the key after the attack: revoked %v, per minute %d, scopes %v", k.Revoked(), k.PerMinute(), k.Scopes())
	}
	if n := s.CountRecords(t, audit.Collection); n != trail {
		t.Errorf("%d audit records after the refused attack, want %d", n, trail)
	}
}

// A key is revoked, never deleted: the dashboard's and the batch API's
// deletions are refused with what to do instead, and the key's history
// stays readable on the staff page.
func TestKeysAreNotDeletedInTheDashboard(t *testing.T) {
	s := apptest.Start(t, "")
	superuser := s.StaffToken(t)
	key := s.NewKey(t, apikeys.NewKey{Name: "shop"})
	id := s.KeyRecord(t, key).Id
	r := s.Do(t, http.MethodDelete, "/api/collections/api_keys/records/"+id, superuser, nil)
	var body struct{ Message string }
	_ = json.Unmarshal(r.Body, &body)
	if r.StatusCode != http.StatusForbidden || !strings.Contains(body.Message, "revoke") {
		t.Errorf("DELETE: %d %s, want 403 saying to revoke", r.StatusCode, r.Body)
	}
	r = s.Do(t, http.MethodPost, "/api/batch", superuser, map[string]any{"requests": []map[string]any{
		{"method": http.MethodDelete, "url": "/api/collections/api_keys/records/" + id}}})
	if r.StatusCode < 400 {
		t.Errorf("the batch API's DELETE: %d %s, want refused", r.StatusCode, r.Body)
	}
	if n := s.CountRecords(t, apikeys.Collection); n != 1 {
		t.Errorf("%d keys after the refused deletions, want 1", n)
	}
	if r := s.Do(t, http.MethodGet, "/api/petstore/keys/"+id+"/history", superuser, nil); r.StatusCode != http.StatusOK {
		t.Errorf("the key's history: %d %s", r.StatusCode, r.Body)
	}
	// A key deleted by an older petstore, whose dashboard deleted keys: its
	// history is still read by its id; an id never seen is 404.
	if _, err := s.App.DB().NewQuery("DELETE FROM api_keys WHERE id = {:id}").Bind(map[string]any{"id": id}).Execute(); err != nil {
		t.Fatal(err)
	}
	r = s.Do(t, http.MethodGet, "/api/petstore/keys/"+id+"/history", superuser, nil)
	if r.StatusCode != http.StatusOK || !strings.Contains(string(r.Body), "key.created") {
		t.Errorf("the deleted key's history: %d %s, want 200 with key.created", r.StatusCode, r.Body)
	}
	if r := s.Do(t, http.MethodGet, "/api/petstore/keys/123456789012345/history", superuser, nil); r.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown key's history: %d %s, want 404", r.StatusCode, r.Body)
	}
}

// A plan's change in the dashboard changes every key on it: it is audited
// as plan.changed, with the quotas before and after and who changed them.
func TestPlanChangesAreAudited(t *testing.T) {
	s := apptest.Start(t, "")
	superuser := s.StaffToken(t)
	plan, err := s.App.FindFirstRecordByData(apikeys.PlansCollection, "name", "free")
	if err != nil {
		t.Fatal(err)
	}
	oldPerMinute := plan.GetString("per_minute")
	r := s.Do(t, http.MethodPatch, "/api/collections/plans/records/"+plan.Id, superuser, map[string]any{"per_minute": 1000000, "per_day": 1000000000})
	if r.StatusCode != http.StatusOK {
		t.Fatalf("the plan's change: %d %s", r.StatusCode, r.Body)
	}
	// A save that changes nothing records nothing.
	if r := s.Do(t, http.MethodPatch, "/api/collections/plans/records/"+plan.Id, superuser, map[string]any{"per_minute": 1000000}); r.StatusCode != http.StatusOK {
		t.Fatalf("the plan's save: %d %s", r.StatusCode, r.Body)
	}
	rows, err := s.App.FindRecordsByFilter(audit.Collection, "action = 'plan.changed'", "", 0, 0)
	if err != nil || len(rows) != 1 {
		t.Fatalf("%d plan.changed records (%v), want 1", len(rows), err)
	}
	var details map[string]map[string]any
	if err := rows[0].UnmarshalJSONField(audit.DetailsField, &details); err != nil {
		t.Fatal(err)
	}
	if details["per_minute"]["old"] != oldPerMinute || details["per_minute"]["new"] != "1000000" ||
		details["per_day"]["new"] != "1000000000" || details["plan"]["name"] != "free" || details["plan"]["id"] != plan.Id {
		t.Errorf("details %v", details)
	}
	if _, ok := details["ban_minutes"]; ok {
		t.Errorf("details record an unchanged field: %v", details)
	}
	if rows[0].GetString(audit.ActorField) == "" || rows[0].GetString(audit.ActorEmailField) == "" {
		t.Errorf("no actor: %v", rows[0])
	}
}
