package realserver_test

import (
	"context"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"petstore/testkit/backupzip"
	"petstore/testkit/realserver"
)

// quietRevocations is the doctored backup of issue 50: a trigger that keeps
// every later key.revoked record out of the trail, the revoked key
// un-revoked and its record deleted.
var quietRevocations = []string{
	"CREATE TRIGGER quiet_revocations BEFORE INSERT ON audit_log WHEN NEW.action = 'key.revoked' BEGIN SELECT RAISE(IGNORE); END",
	"DELETE FROM audit_log WHERE action = 'key.revoked'",
	"UPDATE api_keys SET revoked = ''",
}

// `petstore backup restore` of a doctored backup: the trigger, and a
// cluster follower's mark, are refused, naming what, and the directory is
// left as it was (the revoked key stays revoked, commands still open it);
// a backup whose zip records a setuid file and world-writable directories
// is restored with files 0600 and directories 0700.
func TestBackupRestoreCommandRefusesADoctoredBackup(t *testing.T) {
	dir, p := serveBinary(t)
	key, keyID := createKey(t, dir, "--plan", "business")
	if _, stderr, status := petstore(t, dir, "keys", "revoke", keyID); status != 0 {
		t.Fatalf("revoke: %d %s", status, stderr)
	}
	if _, stderr, status := petstore(t, dir, "backup", "create", "--name", "taken.zip"); status != 0 {
		t.Fatalf("backup create: %d %s", status, stderr)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	taken, err := os.ReadFile(filepath.Join(dir, "backups", "taken.zip"))
	if err != nil {
		t.Fatal(err)
	}
	forge := func(name string, statements []string, entries ...backupzip.Entry) string {
		t.Helper()
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, backupzip.Forge(t, taken, statements, entries...), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}

	refused := func(name, zip, refusal string) {
		t.Helper()
		_, stderr, status := petstore(t, dir, "backup", "restore", zip)
		if status != 1 || !strings.Contains(stderr, refusal) || !strings.Contains(strings.ToLower(stderr), "nothing was changed") {
			t.Errorf("restore of the %s: status %d, stderr %q; want 1 naming %q", name, status, stderr, refusal)
		}
	}
	refused("trigger", forge("quiet.zip", quietRevocations), `trigger "quiet_revocations" on audit_log: neither petstore's migrations nor PocketBase make it`)

	modes := forge("modes.zip", nil,
		backupzip.Entry{Name: "storage/", Mode: fs.ModeDir | 0o777},
		backupzip.Entry{Name: "storage/uploads/", Mode: fs.ModeDir | fs.ModeSetgid | 0o777},
		backupzip.Entry{Name: "storage/uploads/run", Mode: fs.ModeSetuid | 0o755, Content: []byte("#!/bin/sh\n")})
	stdout, stderr, status := petstore(t, dir, "backup", "restore", modes)
	if status != 0 {
		t.Fatalf("restore of a zip with modes: %d %s%s", status, stdout, stderr)
	}
	for path, want := range map[string]fs.FileMode{
		"storage":             fs.ModeDir | 0o700,
		"storage/uploads":     fs.ModeDir | 0o700,
		"storage/uploads/run": 0o600,
		"data.db":             0o600,
	} {
		info, err := os.Stat(filepath.Join(dir, path))
		if err != nil {
			t.Errorf("%s: %v", path, err)
		} else if got := info.Mode() & (fs.ModeType | fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky); got != want {
			t.Errorf("%s restored as %v, want %v", path, got, want)
		}
	}

	refused("follower's mark", forge("follow.zip", nil, backupzip.Entry{Name: "data.db-follow", Mode: 0o600, Content: []byte(`{"cluster":"c","term":1}`)}),
		"data.db-follow: a cluster follower's mark")
	if _, stderr, status := petstore(t, dir, "keys", "list"); status != 0 {
		t.Errorf("keys list after the refused restore: %d %s", status, stderr)
	}

	p, err = realserver.Start(bin, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	if status, body, _ := p.Do(context.Background(), http.MethodGet, "/v1/pets", key, nil); status != http.StatusUnauthorized {
		t.Errorf("the revoked key after the restores: %d %s", status, body)
	}
}
