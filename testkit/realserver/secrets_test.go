package realserver_test

import (
	"archive/zip"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"petstore/internal/atrest"
)

// The keys of the secrets at rest in these tests, in the variables
// --encryptionEnv and --new-key-env name.
const (
	keyA = "PETSTORE_TEST_SECRETS_KEY_A"
	keyB = "PETSTORE_TEST_SECRETS_KEY_B"
)

// A webhook secret made through the staff API is stored sealed: its
// plaintext (or its base64 HMAC key) is in no file of the data directory,
// nor in the data.db of a backup, while deliveries verify with it; `secrets
// rotate-key` (refused while serving) seals it anew under another key, with
// which the next start delivers verifiably, while the old key or none stops
// the start with an error naming --encryptionEnv and holding no secret, and
// the API refuses to restore the backup made under the old key.
func TestWebhookSecretsAtRest(t *testing.T) {
	t.Setenv(keyA, "0123456789abcdefghijklmnopqrstuv")
	t.Setenv(keyB, "vutsrqponmlkjihgfedcba9876543210")
	rcv := newReceiver(t, "127.0.0.1:0")
	s := newWebhookStore(t, "--webhooks-allow-private", "--encryptionEnv", keyA)
	id, secret := s.addEndpoint(t, rcv.url(), "pet.created")
	// A roll keeps the first secret beside the new one, sealed too.
	status, body, err := s.p.Do(context.Background(), http.MethodPost, "/api/petstore/webhooks/"+id+"/roll", s.token, []byte(`{"graceSeconds":3600}`))
	var rolled struct{ Secret string }
	if err != nil || status != http.StatusOK || json.Unmarshal(body, &rolled) != nil || !strings.HasPrefix(rolled.Secret, "whsec_") {
		t.Fatalf("roll: %d %v %s", status, err, body)
	}
	rcv.secret = rolled.Secret
	secrets := []string{secret, rolled.Secret}

	stored := storedSecrets(t, s.dir, id)
	for _, v := range stored {
		if !atrest.Sealed(v) {
			t.Errorf("a secret is stored as %.12q…, not sealed", v)
		}
	}
	checkNowhere(t, s.dir, secrets)
	if _, stderr, status := petstore(t, s.dir, "backup", "create", "--name", "secrets.zip", "--encryptionEnv", keyA); status != 0 {
		t.Fatalf("backup create: %d %s", status, stderr)
	}
	checkNotInBackup(t, filepath.Join(s.dir, "backups", "secrets.zip"), secrets)

	s.createPet(t, "Sealed Rex")
	if d := rcv.waitFor(1, 10*time.Second)[0]; d.verified != nil {
		t.Fatalf("the receiver's library refuses the signature under key A: %v", d.verified)
	}

	// PocketBase's settings, saved now, are encrypted with key A; the
	// rotation reseals them too.
	status, body, err = s.p.Do(context.Background(), http.MethodPatch, "/api/settings", s.token, []byte(`{"meta":{"appName":"Sealed store"}}`))
	if err != nil || status != http.StatusOK {
		t.Fatalf("settings: %d %v %s", status, err, body)
	}
	var settings string
	if err := openData(t, s.dir).QueryRow("SELECT value FROM _params WHERE id = 'settings'").Scan(&settings); err != nil || json.Valid([]byte(settings)) {
		t.Fatalf("PocketBase's settings are stored in plaintext with --encryptionEnv: %v", err)
	}

	// The rotation refuses a directory in use, then, stopped, reseals.
	_, stderr, status := petstore(t, s.dir, "secrets", "rotate-key", "--new-key-env", keyB, "--encryptionEnv", keyA)
	if status != 1 || !strings.Contains(stderr, "in use") {
		t.Fatalf("rotate-key while serving: %d %s", status, stderr)
	}
	if err := s.p.Stop(); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, status := petstore(t, s.dir, "secrets", "rotate-key", "--new-key-env", keyB, "--encryptionEnv", keyA)
	if status != 0 || !strings.Contains(stdout, "1 webhook endpoints") {
		t.Fatalf("rotate-key: %d %s %s", status, stdout, stderr)
	}
	for i, v := range storedSecrets(t, s.dir, id) {
		if !atrest.Sealed(v) || v == stored[i] {
			t.Errorf("secret %d not sealed anew by the rotation", i)
		}
	}
	checkNowhere(t, s.dir, secrets)
	if got := auditRecords(t, s.dir, "secrets.key_rotated"); len(got) != 1 || got[0] != `cli {"endpoints":1,"keyEnv":"`+keyB+`","settings":true}` {
		t.Errorf("secrets.key_rotated records %q, want one by cli", got)
	}

	// The old key, and none, stop the start, naming the flag.
	for _, args := range [][]string{{"--encryptionEnv", keyA}, nil} {
		out := failedStart(t, s.dir, args...)
		if !strings.Contains(out, "--encryptionEnv") {
			t.Errorf("serve %v: no error naming --encryptionEnv:\n%s", args, out)
		}
		for _, secret := range secrets {
			if strings.Contains(out, secret) {
				t.Errorf("serve %v printed a secret", args)
			}
		}
	}

	s.start(t, "--webhooks-allow-private", "--encryptionEnv", keyB, "--allow-backup-restore")
	// The backup made under key A is refused by the API's restore, which
	// would restart the service into data it cannot open.
	status, body, err = s.p.Do(context.Background(), http.MethodPost, "/api/backups/secrets.zip/restore", s.token, nil)
	if err != nil || status != http.StatusBadRequest || !strings.Contains(string(body), "another encryption key than the one --encryptionEnv names") {
		t.Fatalf("restore of a backup under the old key: %d %v %s", status, err, body)
	}
	status, body, err = s.p.Do(context.Background(), http.MethodGet, "/api/settings", s.token, nil)
	if err != nil || status != http.StatusOK || !strings.Contains(string(body), `"appName":"Sealed store"`) {
		t.Errorf("settings after the rotation: %d %v %s", status, err, body)
	}
	s.createPet(t, "Rotated Rex")
	if d := rcv.waitFor(2, 10*time.Second)[1]; d.verified != nil {
		t.Fatalf("the receiver's library refuses the signature under key B: %v", d.verified)
	}
	for _, secret := range secrets {
		if strings.Contains(s.p.Output(), secret) {
			t.Error("the server's output holds a secret")
		}
	}
}

// An install from before the key keeps its secret in plaintext, warned of
// at each start and counted by petstore_webhook_secrets_plaintext, and
// delivering; its first start with a key seals it, once, audited as the
// system's, and delivers on.
func TestWebhookSecretsSealedAtFirstStartWithAKey(t *testing.T) {
	t.Setenv(keyA, "0123456789abcdefghijklmnopqrstuv")
	rcv := newReceiver(t, "127.0.0.1:0")
	metrics := freeAddr(t)
	s := newWebhookStore(t, "--webhooks-allow-private")
	id, secret := s.addEndpoint(t, rcv.url(), "pet.created")
	rcv.secret = secret
	if v := storedSecrets(t, s.dir, id)[0]; v != secret {
		t.Fatalf("without a key the secret is stored as %.12q…, want it as made", v)
	}
	if err := s.p.Stop(); err != nil {
		t.Fatal(err)
	}
	s.start(t, "--webhooks-allow-private", "--metrics-addr", metrics)
	if !strings.Contains(s.p.Output(), "Webhook secrets are stored in plaintext") {
		t.Errorf("no warning of the plaintext secret:\n%s", s.p.Output())
	}
	if n := metricValue(t, metrics, "petstore_webhook_secrets_plaintext", ""); n != 1 {
		t.Errorf("petstore_webhook_secrets_plaintext %v, want 1", n)
	}
	s.createPet(t, "Plain Rex")
	if d := rcv.waitFor(1, 10*time.Second)[0]; d.verified != nil {
		t.Fatalf("plaintext delivery: %v", d.verified)
	}
	if err := s.p.Stop(); err != nil {
		t.Fatal(err)
	}

	for range 2 { // the second start has nothing to seal
		s.start(t, "--webhooks-allow-private", "--metrics-addr", metrics, "--encryptionEnv", keyA)
		if strings.Contains(s.p.Output(), "Webhook secrets are stored in plaintext") {
			t.Errorf("the warning stays with a key:\n%s", s.p.Output())
		}
		if n := metricValue(t, metrics, "petstore_webhook_secrets_plaintext", ""); n != 0 {
			t.Errorf("petstore_webhook_secrets_plaintext %v, want 0", n)
		}
		if err := s.p.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	if v := storedSecrets(t, s.dir, id)[0]; !atrest.Sealed(v) {
		t.Fatalf("after a start with a key the secret is stored as %.12q…", v)
	}
	checkNowhere(t, s.dir, []string{secret})
	if got := auditRecords(t, s.dir, "webhook.secrets_sealed"); len(got) != 1 || got[0] != `system {"endpoints":1}` {
		t.Errorf("webhook.secrets_sealed records %q, want one by system", got)
	}
	s.start(t, "--webhooks-allow-private", "--encryptionEnv", keyA)
	s.createPet(t, "Sealed Rex")
	if d := rcv.waitFor(2, 10*time.Second)[1]; d.verified != nil {
		t.Fatalf("delivery after sealing: %v", d.verified)
	}
}

// openData opens dir's data.db read-only.
func openData(t *testing.T, dir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "data.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// storedSecrets are the secret and previous_secret columns of endpoint id,
// as SQL reads them.
func storedSecrets(t *testing.T, dir, id string) []string {
	t.Helper()
	var secret, previous string
	if err := openData(t, dir).QueryRow("SELECT secret, previous_secret FROM webhook_endpoints WHERE id = ?", id).Scan(&secret, &previous); err != nil {
		t.Fatal(err)
	}
	if previous == "" {
		return []string{secret}
	}
	return []string{secret, previous}
}

// auditRecords are the actor and details of dir's audit records of action.
func auditRecords(t *testing.T, dir, action string) []string {
	t.Helper()
	rows, err := openData(t, dir).Query("SELECT actor || ' ' || details FROM audit_log WHERE action = ? ORDER BY created", action)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	return got
}

// secretForms are the forms a secret could be stored in: as given, and its
// base64 part, the HMAC key's text.
func secretForms(secrets []string) []string {
	var forms []string
	for _, s := range secrets {
		forms = append(forms, s, strings.TrimPrefix(s, "whsec_"))
	}
	return forms
}

// checkNowhere fails t if a file under dir (data.db, its WAL, the
// auxiliary database, the backups' directory…) holds one of secrets.
func checkNowhere(t *testing.T, dir string, secrets []string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, form := range secretForms(secrets) {
			if bytes.Contains(b, []byte(form)) {
				t.Errorf("%s holds a secret in plaintext", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkNotInBackup fails t if the data.db in the backup zip holds one of
// secrets.
func checkNotInBackup(t *testing.T, path string, secrets []string) {
	t.Helper()
	z, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	f, err := z.Open("data.db")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil || len(b) == 0 {
		t.Fatalf("the backup's data.db: %d bytes, %v", len(b), err)
	}
	if !bytes.Contains(b, []byte("webhook_endpoints")) {
		t.Fatal("the backup's data.db has no webhook_endpoints")
	}
	for _, form := range secretForms(secrets) {
		if bytes.Contains(b, []byte(form)) {
			t.Error("the backup's data.db holds a secret in plaintext")
		}
	}
}

// failedStart is the output of a serve on dir that must stop before it
// serves.
func failedStart(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"serve", "--http", freeAddr(t), "--dir", dir}, args...)...)
	out, err := cmd.CombinedOutput()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
		t.Fatalf("serve %v: %v, want exit status 1:\n%s", args, err, out)
	}
	if strings.Contains(string(out), "panic") {
		t.Errorf("serve %v panicked:\n%s", args, out)
	}
	return string(out)
}
