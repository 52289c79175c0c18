package realserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestBackupRestoreRestartsTheService restores a backup through PocketBase's
// API, as the dashboard does. PocketBase then stops the app and replaces the
// process with a new one (same PID): the service must come back with the
// backup's data, the process never having exited, rather than stop its parts
// twice and exit.
func TestBackupRestoreRestartsTheService(t *testing.T) {
	dir, p := serveBinary(t)
	key, _ := createKey(t, dir, "--plan", "business")
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
	staff := func(method, path, body string) (int, []byte) {
		t.Helper()
		var b []byte
		if body != "" {
			b = []byte(body)
		}
		resp, data, err := p.Exchange(ctx, method, path, "", b, "Authorization", auth.Token)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return resp.StatusCode, data
	}
	create := func(name string) int64 {
		t.Helper()
		status, body, err := p.Do(ctx, http.MethodPost, "/v1/pets", key, []byte(`{"name":"`+name+`","categoryId":1}`))
		if err != nil || status != http.StatusCreated {
			t.Fatalf("create %s: %d %v %s", name, status, err, body)
		}
		var pet struct{ ID int64 }
		if err := json.Unmarshal(body, &pet); err != nil {
			t.Fatal(err)
		}
		return pet.ID
	}

	kept := create("Kept")
	if status, body := staff(http.MethodPost, "/api/backups", `{"name":"before.zip"}`); status != http.StatusNoContent {
		t.Fatalf("backup: %d %s", status, body)
	}
	gone := create("Gone")
	pid := p.PID()

	if status, body := staff(http.MethodPost, "/api/backups/before.zip/restore", ""); status != http.StatusNoContent {
		t.Fatalf("restore: %d %s", status, body)
	}

	// The restore answers at once and restarts the process in the
	// background: the pet created after the backup disappears once the new
	// process serves.
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, _, _ := p.Do(ctx, http.MethodGet, fmt.Sprint("/v1/pets/", gone), key, nil)
		if status == http.StatusNotFound {
			break
		}
		if code, err := p.Wait(0); err == nil {
			t.Fatalf("the process exited with status %d during the restore:\n%s", code, p.Output())
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the restore, the pet created after the backup is still served (last status %d):\n%s", status, p.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := getPet(t, p, key, kept); got.Name != "Kept" {
		t.Errorf("the backup's pet came back as %+v", got)
	}
	if p.PID() != pid {
		t.Errorf("the process was replaced by another PID (%d, was %d)", p.PID(), pid)
	}
	if strings.Contains(p.Output(), "panic") {
		t.Errorf("the output has a panic:\n%s", p.Output())
	}
	// The restarted service stops cleanly.
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
}
