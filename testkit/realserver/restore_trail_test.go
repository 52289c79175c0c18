package realserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"petstore/testkit/backupzip"
	"petstore/testkit/realserver"
)

// The attack of issue 36: download a backup, delete its key.revoked record,
// forge an actor and un-revoke the key in its data.db, upload it and
// restore it. With --allow-backup-restore the restore happens, but the
// trail comes out of it whole (every record as it was before, the forged
// one put back), the key revoked again, and the restore recorded with who
// asked for it. Issue 50's, the same with a trigger that drops the
// re-revocation's record, is refused.
func TestRestoreCannotRewriteTheTrail(t *testing.T) {
	dir, p := serveBinary(t, "--allow-backup-restore")
	key, keyID := createKey(t, dir, "--plan", "business")
	ctx := context.Background()
	staff := staffClient(t, p)
	if status, body := staff(http.MethodPost, "/api/petstore/keys/"+keyID+"/revoke", nil, ""); status != http.StatusOK {
		t.Fatalf("revoke: %d %s", status, body)
	}
	if status, body := staff(http.MethodPost, "/api/backups", []byte(`{"name":"taken.zip"}`), ""); status != http.StatusNoContent {
		t.Fatalf("backup: %d %s", status, body)
	}
	var token struct{ Token string }
	_, body := staff(http.MethodPost, "/api/files/token", nil, "")
	if err := json.Unmarshal(body, &token); err != nil {
		t.Fatal(err)
	}
	status, taken, err := p.Do(ctx, http.MethodGet, "/api/backups/taken.zip?token="+url.QueryEscape(token.Token), "", nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("download: %d %v", status, err)
	}
	forged := backupzip.Forge(t, taken, []string{
		"DELETE FROM audit_log WHERE action = 'key.revoked'",
		"UPDATE audit_log SET actor = 'forged', actor_email = 'someone@example.com' WHERE action = 'key.created'",
		"UPDATE api_keys SET revoked = ''",
	}, backupzip.Entry{Name: "storage/brought/run", Mode: fs.ModeSetuid | 0o755, Content: []byte("#!/bin/sh\n")})

	upload := func(name string, zip []byte) {
		t.Helper()
		var multipartBody bytes.Buffer
		w := multipart.NewWriter(&multipartBody)
		part, _ := w.CreateFormFile("file", name)
		part.Write(zip)
		w.Close()
		if status, body := staff(http.MethodPost, "/api/backups/upload", multipartBody.Bytes(), w.FormDataContentType()); status != http.StatusNoContent {
			t.Fatalf("upload: %d %s", status, body)
		}
	}
	// With a trigger that keeps later revocations out of the trail, the
	// backup is refused in the answer, before anything changes.
	upload("quiet.zip", backupzip.Forge(t, taken, quietRevocations))
	if status, body := staff(http.MethodPost, "/api/backups/quiet.zip/restore", nil, ""); status != http.StatusBadRequest ||
		!strings.Contains(string(body), `trigger \"quiet_revocations\" on audit_log`) {
		t.Fatalf("restore of the backup with a trigger: %d %s, want 400 naming the trigger", status, body)
	}

	before := trail(t, staff)
	upload("forged.zip", forged)
	if status, body := staff(http.MethodPost, "/api/backups/forged.zip/restore", nil, ""); status != http.StatusNoContent {
		t.Fatalf("restore: %d %s", status, body)
	}

	// The restore restarts the process; the new one records the restore.
	var restored map[string]any
	for deadline := time.Now().Add(30 * time.Second); restored == nil; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no backup.restored record 30 s after the restore:\n%s", p.Output())
		}
		if code, err := p.Wait(0); err == nil {
			t.Fatalf("the process exited with status %d during the restore:\n%s", code, p.Output())
		}
		if rows := trailOrNil(staff); rows != nil {
			for _, r := range rows {
				if r["action"] == "backup.restored" {
					restored = r
				}
			}
		}
	}
	after := trail(t, staff)
	byID := map[string]map[string]any{}
	for _, r := range after {
		byID[r["id"].(string)] = r
	}
	for _, r := range before {
		got, ok := byID[r["id"].(string)]
		if !ok {
			t.Errorf("the trail lost %v", r)
			continue
		}
		for _, field := range []string{"action", "key", "actor", "actor_email", "address", "created"} {
			if got[field] != r[field] {
				t.Errorf("record %s: %s is %v after the restore, was %v", r["id"], field, got[field], r[field])
			}
		}
	}
	if len(after) <= len(before) {
		t.Errorf("%d records after the restore, %d before", len(after), len(before))
	}
	details, _ := restored["details"].(map[string]any)
	if restored["actor_email"] != "staff@example.com" || details["backup"] != "forged.zip" ||
		details["revokedAgain"] != 1.0 || details["carried"] != float64(len(before)+1) { // and backup.uploaded
		t.Errorf("backup.restored: %v", restored)
	}
	if status, body, _ := p.Do(ctx, http.MethodGet, "/v1/pets", key, nil); status != http.StatusUnauthorized {
		t.Errorf("the revoked key after the restore: %d %s", status, body)
	}
	for _, line := range []string{"Backup restore requested", "Audit: backup.uploaded", "Audit: backup.restored"} {
		if !strings.Contains(p.Output(), line) {
			t.Errorf("the log has no %q", line)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "petstore_restore_trail")); !os.IsNotExist(err) {
		t.Errorf("the trail kept for the restore is still there: %v", err)
	}
	// The zip's modes are not restored.
	if info, err := os.Stat(filepath.Join(dir, "storage", "brought", "run")); err != nil {
		t.Error(err)
	} else if info.Mode() != 0o600 {
		t.Errorf("the zip's setuid file restored as %v, want -rw-------", info.Mode())
	}
}

// staffClient signs in as the superuser serveBinary made and returns a
// function sending its requests (contentType: JSON when empty).
func staffClient(t *testing.T, p *realserver.Process) func(method, path string, body []byte, contentType string) (int, []byte) {
	t.Helper()
	ctx := context.Background()
	status, body, err := p.Do(ctx, http.MethodPost, "/api/collections/_superusers/auth-with-password", "",
		[]byte(`{"identity":"staff@example.com","password":"a long enough password"}`))
	if err != nil || status != http.StatusOK {
		t.Fatalf("superuser auth: %d %v %s", status, err, body)
	}
	var auth struct{ Token string }
	if err := json.Unmarshal(body, &auth); err != nil {
		t.Fatal(err)
	}
	return func(method, path string, body []byte, contentType string) (int, []byte) {
		header := []string{"Authorization", auth.Token}
		if contentType != "" {
			header = append(header, "Content-Type", contentType)
		}
		resp, data, err := p.Exchange(ctx, method, path, "", body, header...)
		if err != nil {
			return 0, nil
		}
		return resp.StatusCode, data
	}
}

// trail is the whole audit trail, oldest first.
func trail(t *testing.T, staff func(method, path string, body []byte, contentType string) (int, []byte)) []map[string]any {
	t.Helper()
	rows := trailOrNil(staff)
	if rows == nil {
		t.Fatal("could not read the audit trail")
	}
	return rows
}

func trailOrNil(staff func(method, path string, body []byte, contentType string) (int, []byte)) []map[string]any {
	status, body := staff(http.MethodGet, "/api/collections/audit_log/records?perPage=500&sort=created", nil, "")
	var page struct{ Items []map[string]any }
	if status != http.StatusOK || json.Unmarshal(body, &page) != nil {
		return nil
	}
	return page.Items
}
