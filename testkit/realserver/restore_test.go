package realserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"petstore/testkit/realserver"
)

// TestBackupRestoreRestartsTheService restores a backup through PocketBase's
// API, as the dashboard does. PocketBase then stops the app and replaces the
// process with a new one (same PID): the service must come back with the
// backup's data, the process never having exited, rather than stop its parts
// twice and exit.
func TestBackupRestoreRestartsTheService(t *testing.T) {
	metricsAddr := freeAddr(t)
	dir, p := serveBinary(t, "--metrics-addr", metricsAddr, "--allow-backup-restore")
	key, keyID := createKey(t, dir, "--plan", "business")
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
	// Each part stopped once, without a failure, and started again.
	if n := strings.Count(p.Output(), `msg="petstore started"`); n != 2 {
		t.Errorf("the service started %d times, want 2 (before and after the restore):\n%s", n, p.Output())
	}
	for _, failure := range []string{"Could not", "level=ERROR"} {
		if strings.Contains(p.Output(), failure) {
			t.Errorf("the output has %q:\n%s", failure, p.Output())
		}
	}
	// The backup was made before its own backup.created record was
	// written: the trail from before the restore brings that record, and
	// the restore's, into the older database.
	var actions []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		status, body := staff(http.MethodGet, "/api/collections/audit_log/records?perPage=100&sort=created", "")
		var page struct{ Items []struct{ Action string } }
		if status == http.StatusOK && json.Unmarshal(body, &page) == nil {
			actions = actions[:0]
			for _, r := range page.Items {
				actions = append(actions, r.Action)
			}
		}
		if slices.Contains(actions, "backup.restored") || time.Now().After(deadline) {
			break
		}
	}
	if got := strings.Join(actions, ","); got != "key.created,backup.created,backup.restored" {
		t.Errorf("the trail after restoring an older backup: %s, want key.created,backup.created,backup.restored", got)
	}
	checkEveryPartBack(t, p, metricsAddr, key, keyID, staff)
	// The restarted service stops cleanly.
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
}

// checkEveryPartBack checks, after a restart, each part serve starts: the
// pets writer and reads, the rate limiter, the usage history, the request
// log and the metrics listener.
func checkEveryPartBack(t *testing.T, p *realserver.Process, metricsAddr, key, keyID string, staff func(method, path, body string) (int, []byte)) {
	t.Helper()
	ctx := context.Background()
	usedToday := func() int64 {
		t.Helper()
		status, body := staff(http.MethodGet, "/api/petstore/keys/"+keyID+"/usage?days=1", "")
		var days []struct{ Requests int64 }
		if status != http.StatusOK || json.Unmarshal(body, &days) != nil || len(days) != 1 {
			t.Fatalf("usage: %d %s", status, body)
		}
		return days[0].Requests
	}
	before := usedToday()

	status, body, err := p.Do(ctx, http.MethodPost, "/v1/pets", key, []byte(`{"name":"After","categoryId":1}`))
	if err != nil || status != http.StatusCreated {
		t.Fatalf("create after the restore: %d %v %s", status, err, body)
	}
	resp, body, err := p.Exchange(ctx, http.MethodGet, "/v1/pets?limit=7", key, nil)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"After"`) {
		t.Fatalf("list after the restore: %v %v %s", resp, err, body)
	}
	if resp.Header.Get("X-RateLimit-Limit") == "" {
		t.Errorf("no rate-limit headers after the restore: %v", resp.Header)
	}
	if got := usedToday(); got != before+2 {
		t.Errorf("usage after the restore: %d requests today, want %d", got, before+2)
	}

	// The request log writes in batches: its row comes within seconds.
	filter := url.QueryEscape(`data.url~"limit=7"`)
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, body := staff(http.MethodGet, "/api/logs?filter="+filter, "")
		var logs struct{ TotalItems int }
		if status == http.StatusOK && json.Unmarshal(body, &logs) == nil && logs.TotalItems > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no request log row for the list after the restore: %d %s", status, body)
		}
		time.Sleep(200 * time.Millisecond)
	}

	families := scrape(t, metricsAddr)
	if _, ok := families["http_server_request_duration_seconds"]; !ok {
		names := make([]string, 0, len(families))
		for name := range families {
			names = append(names, name)
		}
		t.Errorf("the metrics after the restore have no request counts: %v", names)
	}
}

// TestBackupRestoreWaitsForTheOtherInstances restores a backup through one
// of two instances serving one data directory. The restore would replace the
// databases under the other, which would go on serving the data replaced (a
// key revoked in the backup's future valid there, its creates lost): it is
// refused, saying why, until the other has stopped; then it goes through.
func TestBackupRestoreWaitsForTheOtherInstances(t *testing.T) {
	dir, a := serveBinary(t, "--allow-backup-restore")
	b, err := realserver.Start(bin, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Kill)
	key, _ := createKey(t, dir, "--plan", "business")
	ctx := context.Background()
	staff := staffClient(t, a)
	if status, body := staff(http.MethodPost, "/api/backups", []byte(`{"name":"before.zip"}`), ""); status != http.StatusNoContent {
		t.Fatalf("backup: %d %s", status, body)
	}
	status, body, err := b.Do(ctx, http.MethodPost, "/v1/pets", key, []byte(`{"name":"Later","categoryId":1}`))
	if err != nil || status != http.StatusCreated {
		t.Fatalf("create through the other instance: %d %v %s", status, err, body)
	}
	var later struct{ ID int64 }
	if err := json.Unmarshal(body, &later); err != nil {
		t.Fatal(err)
	}

	status, body = staff(http.MethodPost, "/api/backups/before.zip/restore", nil, "")
	if status != http.StatusConflict || !strings.Contains(string(body), "nother petstore process has this data directory open") {
		t.Fatalf("restore while another instance serves: %d %s, want 409 saying another process has the directory open", status, body)
	}
	// Nothing was replaced: both serve the pet made after the backup, and
	// the refused instance can still be restored once it is alone.
	time.Sleep(2 * time.Second) // past the moment PocketBase would have restored
	for _, p := range []*realserver.Process{a, b} {
		if got := getPet(t, p, key, later.ID); got.Name != "Later" {
			t.Fatalf("after the refused restore: %+v", got)
		}
	}
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	if status, body := staff(http.MethodPost, "/api/backups/before.zip/restore", nil, ""); status != http.StatusNoContent {
		t.Fatalf("restore once alone: %d %s", status, body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, _, _ := a.Do(ctx, http.MethodGet, fmt.Sprint("/v1/pets/", later.ID), key, nil)
		if status == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the restore, the pet created after the backup is still served (last status %d):\n%s", status, a.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
}
