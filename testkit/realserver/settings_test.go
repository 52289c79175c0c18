package realserver_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

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

// TestDeclaredBackupsInS3: the backups' S3 storage, schedule and retention
// that the flags declare are the ones PocketBase backs up with. A backup
// made through the dashboard's API lands in the declared bucket (gofakes3 on
// loopback, reached by path with the declared access key), and so does
// petstore backup create's; the dashboard lists the bucket's backups; and at
// the next minute the declared schedule (* * * * *) makes an auto backup
// there and keeps the declared one of them, removing two left by an earlier
// run. Its time goes to waiting for the minute, so it runs beside the
// package's other parallel tests.
func TestDeclaredBackupsInS3(t *testing.T) {
	t.Parallel()
	const bucket, accessKey = "petstore-backups", "AKIDDECLARED"
	backend := s3mem.New()
	if err := backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	var foreignKeys atomic.Int32
	fake := gofakes3.New(backend).Server()
	s3 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Authorization"), "Credential="+accessKey+"/") {
			foreignKeys.Add(1)
			http.Error(w, "not the declared access key", http.StatusForbidden)
			return
		}
		fake.ServeHTTP(w, r)
	}))
	defer s3.Close()
	earlier := []string{"@auto_pb_backup_petstore_20260101000000.zip", "@auto_pb_backup_petstore_20260102000000.zip"}
	for _, name := range earlier {
		if _, err := backend.PutObject(bucket, name, map[string]string{}, strings.NewReader("earlier"), int64(len("earlier")), nil); err != nil {
			t.Fatal(err)
		}
	}
	secretFile := filepath.Join(t.TempDir(), "s3-secret")
	if err := os.WriteFile(secretFile, []byte("s3-5ecret-declared\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir, p := serveBinary(t, "--backups-cron", "* * * * *", "--backups-keep", "1",
		"--backups-s3-bucket", bucket, "--backups-s3-region", "us-east-1", "--backups-s3-endpoint", s3.URL,
		"--backups-s3-access-key", accessKey, "--backups-s3-secret-file", secretFile, "--backups-s3-force-path-style")
	token := superuserToken(t, p)

	status, body, err := p.Do(context.Background(), http.MethodPost, "/api/backups", token, []byte(`{"name":"by_hand.zip"}`))
	if err != nil || status != http.StatusNoContent {
		t.Fatalf("POST /api/backups: %d %v %s", status, err, body)
	}
	if _, err := backend.HeadObject(bucket, "by_hand.zip"); err != nil {
		t.Fatalf("the dashboard's backup is not in the declared bucket: %v", err)
	}
	// The command reads the settings serve saved.
	if stdout, stderr, status := petstore(t, dir, "backup", "create", "--name", "by_command.zip"); status != 0 {
		t.Fatalf("backup create: %d %s %s", status, stdout, stderr)
	} else if strings.Contains(stdout+stderr, "s3-5ecret-declared") {
		t.Errorf("backup create printed the S3 secret:\n%s%s", stdout, stderr)
	}
	if _, err := backend.HeadObject(bucket, "by_command.zip"); err != nil {
		t.Fatalf("backup create's backup is not in the declared bucket: %v", err)
	}
	status, body, err = p.Do(context.Background(), http.MethodGet, "/api/backups", token, nil)
	if err != nil || status != http.StatusOK || !strings.Contains(string(body), `"key":"by_hand.zip"`) || !strings.Contains(string(body), earlier[0]) {
		t.Fatalf("GET /api/backups: %d %v %s; want the bucket's backups", status, err, body)
	}

	// The schedule fires at the next minute; the retention runs after its
	// backup, so the bucket holds one auto backup, not an earlier one, then.
	var autos []string
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		objects, err := backend.ListBucket(bucket, &gofakes3.Prefix{}, gofakes3.ListBucketPage{})
		if err != nil {
			t.Fatal(err)
		}
		autos = autos[:0]
		for _, o := range objects.Contents {
			if strings.HasPrefix(o.Key, "@auto_pb_backup_") {
				autos = append(autos, o.Key)
			}
		}
		if len(autos) == 1 && !slices.Contains(earlier, autos[0]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("90 s after the start, the bucket's auto backups are %v; want one new one (--backups-cron \"* * * * *\", --backups-keep 1)", autos)
		}
	}
	if n := foreignKeys.Load(); n > 0 {
		t.Errorf("%d S3 requests were signed with another access key than the declared one", n)
	}
	if strings.Contains(p.Output(), "s3-5ecret-declared") {
		t.Errorf("a line holds the S3 secret:\n%s", p.Output())
	}
}

// TestDeclaredSMTPSends: the SMTP server, user, password (from a file) and
// sender address that the flags declare are the ones PocketBase mails with,
// beside a sender name the dashboard keeps. The dashboard's Mail settings
// page saves its whole form (meta and smtp, as read, less the redacted
// password): a save that changes the undeclared name passes, one that
// changes the declared server is refused. The dashboard's test mail then
// reaches an SMTP server on loopback, authenticated with the declared user
// and password, from the dashboard's name at the declared address.
func TestDeclaredSMTPSends(t *testing.T) {
	const password = "smtp-Pa55word-declared"
	passwordFile := filepath.Join(t.TempDir(), "smtp-password")
	if err := os.WriteFile(passwordFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sink := startSMTPSink(t)
	_, p := serveBinary(t, "--smtp-host", "127.0.0.1", "--smtp-port", fmt.Sprint(sink.port), "--smtp-username", "shop",
		"--smtp-password-file", passwordFile, "--smtp-sender-address", "shop@example.org")
	token := superuserToken(t, p)

	status, body, err := p.Do(context.Background(), http.MethodGet, "/api/settings", token, nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("GET /api/settings: %d %v %s", status, err, body)
	}
	var page struct {
		Meta map[string]any `json:"meta"`
		SMTP map[string]any `json:"smtp"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatal(err)
	}
	if _, shown := page.SMTP["password"]; shown {
		t.Fatalf("the settings show the SMTP password's field: %v", page.SMTP)
	}
	save := func() (int, []byte) {
		t.Helper()
		b, err := json.Marshal(page)
		if err != nil {
			t.Fatal(err)
		}
		status, body, err := p.Do(context.Background(), http.MethodPatch, "/api/settings", token, b)
		if err != nil {
			t.Fatal(err)
		}
		return status, body
	}
	page.Meta["senderName"] = "The Pet Shop"
	if status, body := save(); status != http.StatusOK {
		t.Fatalf("the Mail page's save of the undeclared sender name: %d %s; want 200", status, body)
	}
	page.SMTP["port"] = 25
	if status, body := save(); status != http.StatusBadRequest || !strings.Contains(string(body), "--smtp-* (PETSTORE_SMTP_*)") {
		t.Fatalf("the Mail page's save of a declared port: %d %s; want 400 naming --smtp-*", status, body)
	}

	status, body, err = p.Do(context.Background(), http.MethodPost, "/api/settings/test/email", token,
		[]byte(`{"template":"verification","email":"owner@example.org"}`))
	if err != nil || status != http.StatusNoContent {
		t.Fatalf("POST /api/settings/test/email: %d %v %s", status, err, body)
	}
	var m smtpMessage
	select {
	case m = <-sink.messages:
	case <-time.After(10 * time.Second):
		t.Fatal("the SMTP server received no mail")
	}
	if want := "\x00shop\x00" + password; m.auth != want {
		t.Errorf("AUTH PLAIN %q, want %q (the declared user and password)", m.auth, want)
	}
	if m.from != "<shop@example.org>" || m.to != "<owner@example.org>" {
		t.Errorf("MAIL FROM %s, RCPT TO %s; want the declared sender to owner@example.org", m.from, m.to)
	}
	if !strings.Contains(m.data, "From: The Pet Shop <shop@example.org>") {
		t.Errorf("the mail is not from the dashboard's sender name at the declared address:\n%s", m.data)
	}
	if strings.Contains(p.Output(), password) {
		t.Errorf("a line holds the SMTP password:\n%s", p.Output())
	}
}

// smtpMessage is what smtpSink received in one session.
type smtpMessage struct{ auth, from, to, data string }

// smtpSink is an SMTP server on loopback that offers AUTH PLAIN (no TLS:
// Go's client sends PLAIN in the clear to 127.0.0.1 only) and hands each
// session's mail to messages.
type smtpSink struct {
	port     int
	messages chan smtpMessage
}

func startSMTPSink(t *testing.T) *smtpSink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &smtpSink{port: ln.Addr().(*net.TCPAddr).Port, messages: make(chan smtpMessage, 4)}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go s.session(conn)
		}
	}()
	return s
}

func (s *smtpSink) session(conn net.Conn) {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	tp := textproto.NewConn(conn)
	var m smtpMessage
	tp.PrintfLine("220 sink ESMTP")
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return
		}
		verb, arg, _ := strings.Cut(line, " ")
		switch strings.ToUpper(verb) {
		case "EHLO", "HELO":
			tp.PrintfLine("250-sink")
			tp.PrintfLine("250 AUTH PLAIN")
		case "AUTH":
			_, b64, _ := strings.Cut(arg, " ")
			raw, _ := base64.StdEncoding.DecodeString(b64)
			m.auth = string(raw)
			tp.PrintfLine("235 2.7.0 Authentication successful")
		case "MAIL":
			m.from = strings.TrimPrefix(arg, "FROM:")
			if i := strings.Index(m.from, " "); i > 0 {
				m.from = m.from[:i] // BODY=8BITMIME and the like
			}
			tp.PrintfLine("250 OK")
		case "RCPT":
			m.to = strings.TrimPrefix(arg, "TO:")
			tp.PrintfLine("250 OK")
		case "DATA":
			tp.PrintfLine("354 go on")
			data, err := tp.ReadDotBytes()
			if err != nil {
				return
			}
			m.data = string(data)
			tp.PrintfLine("250 OK")
			s.messages <- m
		case "QUIT":
			tp.PrintfLine("221 bye")
			return
		default:
			tp.PrintfLine("250 OK")
		}
	}
}
