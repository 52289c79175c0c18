package hooks_test

import (
	"net/http"
	"testing"

	"petstore/internal/apikeys"
	"petstore/internal/apptest"
	"petstore/internal/audit"
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
