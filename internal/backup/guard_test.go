package backup_test

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/testkit/apptest"
)

// Without serve --allow-backup-restore, the backups API takes no upload and
// restores nothing, superusers included: a restore replaces every key, plan
// and pet, and the trail with them. Backups are still made, downloaded and
// deleted, and each of these is in the audit trail with its superuser.
func TestBackupUploadAndRestoreNeedTheFlag(t *testing.T) {
	s := apptest.Start(t, "")
	superuser := s.StaffToken(t)
	s.NewKey(t, apikeys.NewKey{})
	if r := s.Do(t, http.MethodPost, "/api/backups", superuser, map[string]any{"name": "made.zip"}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("create: %d %s", r.StatusCode, r.Body)
	}
	zip := download(t, s, superuser, "made.zip")

	for _, r := range []*apptest.Response{
		upload(t, s, superuser, "uploaded.zip", zip),
		s.Do(t, http.MethodPost, "/api/backups/made.zip/restore", superuser, nil),
	} {
		var body struct{ Message string }
		_ = json.Unmarshal(r.Body, &body)
		if r.StatusCode != http.StatusForbidden || !strings.Contains(body.Message, "--allow-backup-restore") {
			t.Errorf("%s %s without the flag: %d %s, want 403 naming the flag", r.Request.Method, r.Request.URL.Path, r.StatusCode, r.Body)
		}
	}
	if r := s.Do(t, http.MethodDelete, "/api/backups/made.zip", superuser, nil); r.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.StatusCode, r.Body)
	}
	checkBackupTrail(t, s, "made.zip", audit.BackupCreated, audit.BackupDownloaded, audit.BackupDeleted)
	if rows, _ := s.App.FindRecordsByFilter(audit.Collection, "action = 'backup.uploaded'", "", 0, 0); len(rows) != 0 {
		t.Errorf("a refused upload is in the trail")
	}
}

// With the flag, an upload goes through and is audited.
func TestBackupUploadIsAudited(t *testing.T) {
	s := apptest.StartWith(t, apptest.Config{AllowBackupRestore: true})
	superuser := s.StaffToken(t)
	if r := s.Do(t, http.MethodPost, "/api/backups", superuser, map[string]any{"name": "made.zip"}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("create: %d %s", r.StatusCode, r.Body)
	}
	zip := download(t, s, superuser, "made.zip")
	if r := upload(t, s, superuser, "brought.zip", zip); r.StatusCode != http.StatusNoContent {
		t.Fatalf("upload: %d %s", r.StatusCode, r.Body)
	}
	checkBackupTrail(t, s, "brought.zip", audit.BackupUploaded)
}

// download fetches a backup with a superuser's file token, as the dashboard
// does.
func download(t *testing.T, s *apptest.Server, superuser, name string) []byte {
	t.Helper()
	var token struct{ Token string }
	s.Do(t, http.MethodPost, "/api/files/token", superuser, nil).JSON(t, &token)
	r := s.Do(t, http.MethodGet, "/api/backups/"+name+"?token="+url.QueryEscape(token.Token), "", nil)
	if r.StatusCode != http.StatusOK || len(r.Body) == 0 {
		t.Fatalf("download %s: %d", name, r.StatusCode)
	}
	return r.Body
}

// upload sends zip as the backup name, as the dashboard's upload does.
func upload(t *testing.T, s *apptest.Server, superuser, name string, zip []byte) *apptest.Response {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	part, err := w.CreateFormFile("file", name)
	if err != nil {
		t.Fatal(err)
	}
	part.Write(zip)
	w.Close()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/api/backups/upload", &body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("Authorization", superuser)
	return s.Send(t, req)
}

// checkBackupTrail checks that the trail holds one record of each action on
// the backup name, in order, by the superuser.
func checkBackupTrail(t *testing.T, s *apptest.Server, name string, actions ...audit.Action) {
	t.Helper()
	rows, err := s.App.FindRecordsByFilter(audit.Collection, "action ~ 'backup.%' && details.backup = {:name}", "created", 0, 0, map[string]any{"name": name})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.GetString(audit.ActionField))
		if r.GetString(audit.ActorEmailField) != "staff@example.com" || r.GetString(audit.AddressField) == "" {
			t.Errorf("%s by %q (%s) from %q, want the superuser", r.GetString(audit.ActionField), r.GetString(audit.ActorField),
				r.GetString(audit.ActorEmailField), r.GetString(audit.AddressField))
		}
	}
	want := make([]string, len(actions))
	for i, a := range actions {
		want[i] = string(a)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("the trail of %s: %v, want %v", name, got, want)
	}
}
