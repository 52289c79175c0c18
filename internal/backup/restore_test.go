package backup_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/testkit/apptest"
	"petstore/testkit/backupzip"
)

// The attack of issue 50: a backup doctored to bring back a revoked key and
// keep later revocations out of the trail, or to open a fixed collection,
// uploaded and restored through the API with --allow-backup-restore. The
// restore is refused before anything changes, its answer and the trail
// naming each object refused; the revoked key stays revoked, the
// collection as its migrations made it.
func TestRestoreRefusesADoctoredBackup(t *testing.T) {
	s := apptest.StartWith(t, apptest.Config{AllowBackupRestore: true})
	superuser := s.StaffToken(t)
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	if r := s.Do(t, http.MethodPost, "/api/petstore/keys/"+s.KeyRecord(t, key).Id+"/revoke", superuser, nil); r.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %d %s", r.StatusCode, r.Body)
	}
	// Staff's own collections, a field added to one after it was made (an
	// ALTER TABLE), an index and a view: PocketBase makes them, the check
	// takes them.
	for _, c := range []struct {
		method, path string
		body         map[string]any
	}{
		{http.MethodPost, "/api/collections", map[string]any{"name": "notes", "type": "base", "listRule": "",
			"fields": []map[string]any{{"name": "title", "type": "text"}}}},
		{http.MethodPatch, "/api/collections/notes", map[string]any{"fields": []map[string]any{{"name": "title", "type": "text"},
			{"name": "stars", "type": "number"}}, "indexes": []string{"CREATE INDEX idx_notes_stars ON notes (stars)"}}},
		{http.MethodPost, "/api/collections", map[string]any{"name": "note_titles", "type": "view", "listRule": "",
			"viewQuery": "SELECT id, title FROM notes"}},
	} {
		if r := s.Do(t, c.method, c.path, superuser, c.body); r.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d %s", c.method, c.path, r.StatusCode, r.Body)
		}
	}
	if r := s.Do(t, http.MethodPost, "/api/backups", superuser, map[string]any{"name": "taken.zip"}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("create: %d %s", r.StatusCode, r.Body)
	}
	taken := download(t, s, superuser, "taken.zip")
	unrevoke := []string{"DELETE FROM audit_log WHERE action = 'key.revoked'", "UPDATE api_keys SET revoked = ''"}

	for _, c := range []struct {
		name       string
		statements []string
		aux        []string // run on auxiliary.db
		entries    []backupzip.Entry
		refused    []string // in the answer and the trail's details
		alongside  bool     // what refused goes with more (the indexes of a renamed table)
	}{
		{
			name: "trigger",
			statements: append([]string{"CREATE TRIGGER quiet_revocations BEFORE INSERT ON audit_log WHEN NEW.action = 'key.revoked' " +
				"BEGIN SELECT RAISE(IGNORE); END"}, unrevoke...),
			refused: []string{`trigger "quiet_revocations" on audit_log: neither petstore's migrations nor PocketBase make it`},
		},
		{
			name:       "collection",
			statements: []string{"UPDATE _collections SET listRule = '', viewRule = '' WHERE name = 'audit_log'"},
			refused:    []string{"the collection audit_log"},
		},
		{
			name:       "renamed collection",
			statements: []string{"UPDATE _collections SET name = 'trail' WHERE name = 'audit_log'", "ALTER TABLE audit_log RENAME TO trail"},
			refused:    []string{"the collection audit_log", `table "trail": neither`, `index "idx_audit_log_created" on trail`},
			alongside:  true,
		},
		{
			name:       "index",
			statements: []string{"CREATE UNIQUE INDEX one_revocation ON audit_log (action)"},
			refused:    []string{`index "one_revocation" on audit_log: neither`},
		},
		{
			name:       "column",
			statements: []string{"ALTER TABLE api_keys ADD COLUMN note TEXT CHECK (note IS NULL)"},
			refused:    []string{`table "api_keys": its definition differs`},
		},
		{
			name:       "view",
			statements: []string{"CREATE VIEW hashes AS SELECT * FROM api_keys"},
			refused:    []string{`view "hashes": neither`},
		},
		{
			name:       "Litestream's table",
			statements: []string{"CREATE TABLE _litestream_seq (id INTEGER PRIMARY KEY, seq INTEGER, note TEXT DEFAULT 'x')"},
			refused:    []string{`table "_litestream_seq": its definition differs`},
		},
		{
			name:    "logs trigger",
			aux:     []string{"CREATE TRIGGER quiet_logs BEFORE INSERT ON _logs BEGIN SELECT RAISE(IGNORE); END"},
			refused: []string{`auxiliary.db's trigger "quiet_logs" on _logs: neither`},
		},
		{
			name:    "follower's mark",
			entries: []backupzip.Entry{{Name: "data.db-follow", Mode: 0o600, Content: []byte(`{"cluster":"c","term":1}`)}},
			refused: []string{"data.db-follow: a cluster follower's mark"},
		},
		{
			name:    "carried trail",
			entries: []backupzip.Entry{{Name: "petstore_restore_trail/petstore_restore.json", Mode: 0o600, Content: []byte(`{}`)}},
			refused: []string{"petstore_restore_trail: the audit trail a restore carries across"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := strings.ReplaceAll(strings.ReplaceAll(c.name, " ", "_"), "'", "") + ".zip"
			if r := upload(t, s, superuser, name, backupzip.ForgeDatabases(t, taken, map[string][]string{"data.db": c.statements, "auxiliary.db": c.aux}, c.entries...)); r.StatusCode != http.StatusNoContent {
				t.Fatalf("upload: %d %s", r.StatusCode, r.Body)
			}
			r := s.Do(t, http.MethodPost, "/api/backups/"+name+"/restore", superuser, nil)
			var body struct{ Message string }
			_ = json.Unmarshal(r.Body, &body)
			if r.StatusCode != http.StatusBadRequest {
				t.Fatalf("restore: %d %s, want 400", r.StatusCode, r.Body)
			}
			for _, want := range c.refused {
				if !strings.Contains(body.Message, want) {
					t.Errorf("the answer %q does not name %q", body.Message, want)
				}
			}
			rows, err := s.App.FindRecordsByFilter(audit.Collection, "action = 'backup.restore_refused' && details.backup = {:name}", "", 0, 0,
				map[string]any{"name": name})
			if err != nil || len(rows) != 1 {
				t.Fatalf("backup.restore_refused records: %d %v", len(rows), err)
			}
			var details struct {
				Refused []string `json:"refused"`
			}
			if err := rows[0].UnmarshalJSONField(audit.DetailsField, &details); err != nil {
				t.Fatal(err)
			}
			if len(details.Refused) != len(c.refused) && !c.alongside {
				t.Errorf("refused %q, want only %q", details.Refused, c.refused)
			}
			all := strings.Join(details.Refused, "\n")
			for _, want := range c.refused {
				if !strings.Contains(all, want) {
					t.Errorf("the trail's refusal %q does not name %q", all, want)
				}
			}
			if rows[0].GetString(audit.ActorEmailField) != "staff@example.com" {
				t.Errorf("refused for %q, want the superuser", rows[0].GetString(audit.ActorEmailField))
			}
		})
	}

	// Nothing changed: the key is still revoked, the trail still open to
	// superusers alone, and the backup as taken is still restorable.
	if r := s.Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("the revoked key after the refused restores: %d %s", r.StatusCode, r.Body)
	}
	if r := s.Do(t, http.MethodGet, "/api/collections/audit_log/records", "", nil); r.StatusCode == http.StatusOK {
		t.Errorf("guests read the trail after the refused restores: %s", r.Body)
	}
}
