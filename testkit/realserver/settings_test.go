package realserver_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"petstore/testkit/realserver"
)

// TestDeclaredSettings: serve's flags and variables declare the backups'
// schedule, retention and S3 storage, the SMTP server and the sender, the
// trusted proxy headers; the
// settings API (the dashboard) shows them without their secrets and refuses
// to change them, naming the flag, while an undeclared setting stays the
// dashboard's; no line of the run holds a secret; a second start with the
// same flags saves nothing; a bad value stops serve, naming the flag.
func TestDeclaredSettings(t *testing.T) {
	const password, s3Secret = "smtp-Pa55word-planted", "s3-5ecret-planted"
	passwordFile := filepath.Join(t.TempDir(), "smtp-password")
	if err := os.WriteFile(passwordFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PETSTORE_BACKUPS_S3_SECRET", s3Secret)
	t.Setenv("PETSTORE_SMTP_SENDER_NAME", "The Pet Shop")
	args := []string{"--backups-cron", "30 3 * * *", "--backups-keep", "4",
		"--backups-s3-bucket", "petstore-backups", "--backups-s3-region", "eu-central-1",
		"--backups-s3-endpoint", "https://s3.example.org", "--backups-s3-access-key", "AKIDPLANTED",
		"--smtp-host", "smtp.example.org", "--smtp-port", "2525", "--smtp-username", "shop",
		"--smtp-password-file", passwordFile, "--smtp-sender-address", "shop@example.org",
		"--trusted-proxy-headers", "X-Forwarded-For", "--proxy-addresses", "127.0.0.1"}
	dir, p := serveBinary(t, args...)
	token := superuserToken(t, p)

	status, body, err := p.Do(context.Background(), http.MethodGet, "/api/settings", token, nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("GET /api/settings: %d %v %s", status, err, body)
	}
	for _, want := range []string{`"cron":"30 3 * * *"`, `"cronMaxKeep":4`, `"bucket":"petstore-backups"`, `"accessKey":"AKIDPLANTED"`,
		`"host":"smtp.example.org"`, `"port":2525`, `"username":"shop"`, `"senderName":"The Pet Shop"`, `"senderAddress":"shop@example.org"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the settings lack %s:\n%s", want, body)
		}
	}
	if strings.Contains(string(body), password) || strings.Contains(string(body), s3Secret) {
		t.Errorf("the settings API shows a secret:\n%s", body)
	}

	for change, flag := range map[string]string{
		`{"smtp":{"host":"mail.example.net"}}`:       "--smtp-* (PETSTORE_SMTP_*)",
		`{"backups":{"cron":"0 1 * * *"}}`:           "--backups-cron (PETSTORE_BACKUPS_CRON)",
		`{"meta":{"senderName":"Other"}}`:            "--smtp-sender-name (PETSTORE_SMTP_SENDER_NAME)",
		`{"trustedProxy":{"headers":["X-Real-IP"]}}`: "--trusted-proxy-headers (PETSTORE_TRUSTED_PROXY_HEADERS)",
	} {
		status, body, err := p.Do(context.Background(), http.MethodPatch, "/api/settings", token, []byte(change))
		if err != nil || status != http.StatusBadRequest || !strings.Contains(string(body), flag) {
			t.Errorf("PATCH %s: %d %v %s; want 400 naming %s", change, status, err, body, flag)
		}
	}
	status, body, err = p.Do(context.Background(), http.MethodPatch, "/api/settings", token, []byte(`{"meta":{"appName":"Pets"}}`))
	if err != nil || status != http.StatusOK || !strings.Contains(string(body), `"appName":"Pets"`) {
		t.Errorf("PATCH an undeclared setting: %d %v %s; want 200", status, err, body)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	first := p.Output()
	if !strings.Contains(first, `msg="Settings saved from the flags"`) {
		t.Errorf("the first start does not say it saved the settings:\n%s", first)
	}

	p, err = realserver.Start(bin, dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	p.Kill()
	if strings.Contains(p.Output(), "Settings saved") {
		t.Errorf("a start with the same flags saved the settings again:\n%s", p.Output())
	}
	for _, out := range []string{first, p.Output()} {
		for _, secret := range []string{password, s3Secret} {
			if strings.Contains(out, secret) {
				t.Errorf("a line holds the secret %q:\n%s", secret, out)
			}
		}
	}

	for _, bad := range []struct {
		args []string
		flag string
	}{
		{[]string{"--backups-cron", "every night"}, "--backups-cron"},
		{[]string{"--smtp-host", "smtp.example.org", "--smtp-password-file", filepath.Join(dir, "missing")}, "--smtp-password-file"},
		{[]string{"--backups-s3-bucket", "b"}, "--backups-s3-endpoint"},
		{[]string{"--smtp-sender-address", "not an address"}, "--smtp-sender-address"},
	} {
		_, stderr, status := petstore(t, dir, append([]string{"serve"}, bad.args...)...)
		if status != 1 || !strings.Contains(stderr, bad.flag) {
			t.Errorf("serve %v: status %d, stderr %q; want 1 naming %s", bad.args, status, stderr, bad.flag)
		}
	}
}
