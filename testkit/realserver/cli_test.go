package realserver_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/apikeys"
	"petstore/testkit/realserver"
)

var keyLine = regexp.MustCompile(`^pet_[A-Za-z0-9_-]{43}$`)

// petstore runs `petstore ARGS --dir DIR` and returns its output and exit
// status.
func petstore(t *testing.T, dir string, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	stdout, stderr, err := realserver.Run(bin, dir, args...)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		status = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return stdout, stderr, status
}

// keyRecords opens dir like the server does and returns its api_keys.
func keyRecords(t *testing.T, dir string) []*apikeys.APIKey {
	t.Helper()
	app := core.NewBaseApp(core.BaseAppConfig{DataDir: dir})
	if err := app.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	defer app.ResetBootstrapState()
	records, err := apikeys.List(app)
	if err != nil {
		t.Fatal(err)
	}
	return records
}

func TestKeysCreate(t *testing.T) {
	dir := t.TempDir()
	key, id := createKey(t, dir, "--plan", "free", "--name", "x")
	expires := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	_, id2 := createKey(t, dir, "--plan", "enterprise", "--per-minute", "5", "--per-day", "7", "--expires", expires.Format(time.RFC3339))

	records := keyRecords(t, dir)
	if len(records) != 2 {
		t.Fatalf("%d keys stored, want 2", len(records))
	}
	for _, r := range records {
		plan := r.Plan().Name()
		switch r.Id {
		case id:
			if plan != "free" || r.Name() != "x" || r.Hash() != apikeys.Hash(key) ||
				!strings.HasPrefix(key, r.Prefix()) || !r.Expires().IsZero() {
				t.Errorf("free key stored as %v", r.FieldsData())
			}
		case id2:
			if plan != "enterprise" || r.PerMinute() != 5 || r.PerDay() != 7 ||
				!r.Expires().Equal(expires) {
				t.Errorf("enterprise key stored as %v", r.FieldsData())
			}
		default:
			t.Errorf("unexpected key %s", r.Id)
		}
	}
}

func TestKeysFailures(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"unknown plan", []string{"keys", "create", "--plan", "gold"}, `unknown plan "gold"`},
		{"missing --plan", []string{"keys", "create"}, "--plan is required"},
		{"empty --plan", []string{"keys", "create", "--plan", ""}, "--plan is required"},
		{"bad --per-minute", []string{"keys", "create", "--plan", "free", "--per-minute", "abc"}, `invalid argument "abc" for "--per-minute"`},
		{"negative --per-day", []string{"keys", "create", "--plan", "free", "--per-day", "-1"}, "must be positive"},
		{"unknown flag", []string{"keys", "create", "--plan", "free", "--colour", "red"}, "unknown flag: --colour"},
		{"bad --expires", []string{"keys", "create", "--plan", "free", "--expires", "tomorrow"}, "not an RFC 3339 time"},
		{"past --expires", []string{"keys", "create", "--plan", "free", "--expires", "2020-01-01T00:00:00Z"}, "must be in the future"},
		{"argument to create", []string{"keys", "create", "--plan", "free", "extra"}, `unknown command "extra"`},
		{"unknown --scopes", []string{"keys", "create", "--plan", "free", "--name", "x", "--scopes", "pets:read,pets:delete"},
			`--scopes: unknown scope "pets:delete": the scopes are pets:read and pets:write`},
		{"empty --scopes", []string{"keys", "create", "--plan", "free", "--name", "x", "--scopes", ""}, "--scopes: a key needs at least one scope"},
		{"unknown command", []string{"keys", "rotate"}, `unknown command "rotate"`},
		{"revoke unknown id", []string{"keys", "revoke", "abcdefghijklmno"}, `no API key with id "abcdefghijklmno"`},
		{"revoke without id", []string{"keys", "revoke"}, "accepts 1 arg(s), received 0"},
		{"revoke two ids", []string{"keys", "revoke", "a", "b"}, "accepts 1 arg(s), received 2"},
		{"roll unknown id", []string{"keys", "roll", "abcdefghijklmno"}, `no API key with id "abcdefghijklmno"`},
		{"roll without id", []string{"keys", "roll"}, "accepts 1 arg(s), received 0"},
		{"roll bad --grace", []string{"keys", "roll", "abcdefghijklmno", "--grace", "a day"}, `invalid argument "a day" for "--grace"`},
		{"roll negative --grace", []string{"keys", "roll", "abcdefghijklmno", "--grace", "-1h"}, "the grace period must be from 0 to 30 days"},
		{"unban unknown id", []string{"keys", "unban", "abcdefghijklmno"}, `no API key with id "abcdefghijklmno"`},
		{"unban without id", []string{"keys", "unban"}, "accepts 1 arg(s), received 0"},
		{"create without --name", []string{"keys", "create", "--plan", "free"}, "a name is required"},
		{"create with a blank --name", []string{"keys", "create", "--plan", "free", "--name", "  "}, "a name is required"},
		{"create with ESC in --name", []string{"keys", "create", "--plan", "free", "--name", "\x1b[2Jx"}, "(it holds U+001B)"},
		{"create with per minute above per day", []string{"keys", "create", "--plan", "free", "--name", "x", "--per-minute", "100", "--per-day", "10"},
			"the per-minute quota, 100 (the key's own), is above the per-day quota, 10 (the key's own)"},
		{"expire without a time", []string{"keys", "expire", "abcdefghijklmno"}, "give either --at TIME (RFC 3339, in the future) or --never"},
		{"expire with both", []string{"keys", "expire", "abcdefghijklmno", "--at", "2099-01-01T00:00:00Z", "--never"}, "give either --at"},
		{"expire with a bad time", []string{"keys", "expire", "abcdefghijklmno", "--at", "soon"}, `--at "soon" is not an RFC 3339 time`},
		{"expire in the past", []string{"keys", "expire", "abcdefghijklmno", "--at", "2020-01-01T00:00:00Z"}, "the expiry must be in the future"},
		{"expire unknown id", []string{"keys", "expire", "abcdefghijklmno", "--never"}, `no API key with id "abcdefghijklmno"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, status := petstore(t, dir, tt.args...)
			if status == 0 || stdout != "" || !strings.HasPrefix(stderr, "Error: ") || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("status %d, stdout %q, stderr %q; want non-zero, nothing on stdout, %q", status, stdout, stderr, tt.stderr)
			}
		})
	}
	if n := len(keyRecords(t, dir)); n != 0 {
		t.Errorf("failed commands stored %d keys", n)
	}
}

func TestKeysListAndRevoke(t *testing.T) {
	dir := t.TempDir()
	key1, id1 := createKey(t, dir, "--plan", "pro", "--name", "shop-one")
	key2, id2 := createKey(t, dir, "--plan", "business", "--name", "shop-two")

	_, stderr, status := petstore(t, dir, "keys", "revoke", id1)
	if status != 0 || !strings.Contains(stderr, "Revoked API key "+id1) {
		t.Fatalf("revoke: status %d, stderr %q", status, stderr)
	}

	stdout, _, status := petstore(t, dir, "keys", "list")
	if status != 0 {
		t.Fatalf("list: status %d", status)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 3 || !regexp.MustCompile(`^ID\s+NAME\s+PREFIX\s+PLAN\s+STATE\b`).MatchString(lines[0]) {
		t.Fatalf("list:\n%s\nwant a header and two keys", stdout)
	}
	for _, k := range []struct{ key, id, name, plan, state string }{
		{key1, id1, "shop-one", "pro", "revoked"},
		{key2, id2, "shop-two", "business", "active"},
	} {
		want := fmt.Sprintf(`(?m)^%s\s+%s\s+%s…\s+%s\s+%s\s`, k.id, k.name, regexp.QuoteMeta(apikeys.DisplayPrefix(k.key)), k.plan, k.state)
		if !regexp.MustCompile(want).MatchString(stdout) {
			t.Errorf("list has no line %q:\n%s", want, stdout)
		}
		if strings.Contains(stdout, k.key) || strings.Contains(stdout, apikeys.Hash(k.key)) {
			t.Errorf("list shows a key or its hash:\n%s", stdout)
		}
	}
}

// A key revoked with the CLI while the server runs (another process on the
// same --dir) is refused from the next request on, though the server keeps
// the key it found across commits of other tables (a pet's create).
func TestRevokeWhileServing(t *testing.T) {
	dir, p := serveBinary(t)
	get := func(key string) *http.Response {
		t.Helper()
		resp, _, err := p.Exchange(context.Background(), http.MethodGet, "/v1/pets", key, nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	key, id := createKey(t, dir, "--plan", "free")
	if resp := get(key); resp.StatusCode != http.StatusOK {
		t.Fatalf("new key: %d, want 200", resp.StatusCode)
	}
	if status, out, err := p.Do(context.Background(), http.MethodPost, "/v1/pets", key, []byte(`{"name":"Rex","categoryId":1}`)); err != nil || status != http.StatusCreated {
		t.Fatalf("create: %d %s %v", status, out, err)
	}
	if resp := get(key); resp.StatusCode != http.StatusOK {
		t.Fatalf("after a create: %d, want 200", resp.StatusCode)
	}
	if _, stderr, status := petstore(t, dir, "keys", "revoke", id); status != 0 {
		t.Fatalf("revoke: %d %s", status, stderr)
	}
	resp := get(key)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Fatalf("revoked key: %d %q, want 401 invalid_token", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}

// Rolling and unbanning with the CLI while the server runs: a roll keeps the
// ban, the old secret works through its grace period, and an unban from
// another process lets the next request through.
func TestRollAndUnbanWhileServing(t *testing.T) {
	dir, p := serveBinary(t)
	get := func(key string) (int, string) {
		t.Helper()
		status, body, err := p.Do(context.Background(), http.MethodGet, "/v1/pets", key, nil)
		if err != nil {
			t.Fatal(err)
		}
		return status, string(body)
	}

	// serve's start-up lines say where everything is.
	for _, path := range []string{"/v1/pets", "/docs/", "/staff/", "/_/"} {
		if !regexp.MustCompile(`(?m)^[├└]─ .*http://127\.0\.0\.1:\d+` + regexp.QuoteMeta(path) + `(\s|$)`).MatchString(p.Output()) {
			t.Errorf("serve's output does not name %s:\n%s", path, p.Output())
		}
	}

	key, id := createKey(t, dir, "--plan", "free", "--per-minute", "1")
	for {
		if _, body := get(key); strings.Contains(body, "api_key_banned") {
			break
		}
	}

	stdout, stderr, status := petstore(t, dir, "keys", "roll", id, "--grace", "1h")
	newKey, _, _ := strings.Cut(stdout, "\n")
	if status != 0 || !keyLine.MatchString(newKey) || newKey == key ||
		!strings.Contains(stderr, "Rolled API key "+id) || !strings.Contains(stderr, "works until") {
		t.Fatalf("roll: status %d, stdout %q, stderr %q", status, stdout, stderr)
	}
	for _, k := range []string{newKey, key} {
		if status, body := get(k); status != http.StatusTooManyRequests || !strings.Contains(body, "api_key_banned") {
			t.Fatalf("after the roll: %d %s, want still banned", status, body)
		}
	}

	if _, stderr, status := petstore(t, dir, "keys", "unban", id); status != 0 {
		t.Fatalf("unban: %d %s", status, stderr)
	}
	if status, body := get(newKey); status != http.StatusOK {
		t.Fatalf("new key after the unban: %d %s, want 200", status, body)
	}
	stdout, _, _ = petstore(t, dir, "keys", "list")
	if !regexp.MustCompile(`(?m)^` + id + `\s.*\sactive\s`).MatchString(stdout) {
		t.Errorf("list after the unban:\n%s", stdout)
	}
}

// serveBinary serves the built binary, with serve's args, on a fresh data
// directory, for CLI commands run beside it.
func serveBinary(t *testing.T, args ...string) (string, *realserver.Process) {
	t.Helper()
	dir := t.TempDir()
	// A superuser first, so that serve does not open the installer.
	if _, stderr, status := petstore(t, dir, "superuser", "upsert", "staff@example.com", "a long enough password"); status != 0 {
		t.Fatalf("superuser upsert: %d %s", status, stderr)
	}
	p, err := realserver.Start(bin, dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	p.CheckContract(t)
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("server output:\n%s", p.Output())
		}
	})
	return dir, p
}

// `keys expire` sets, moves and removes an expiry while the server runs; a
// revoked or expired key is not rolled; `keys list` prints a name saved
// before names were checked without letting it act on the terminal.
func TestKeysExpireAndDeadKeys(t *testing.T) {
	dir, p := serveBinary(t)
	get := func(key string) int {
		t.Helper()
		status, _, err := p.Do(context.Background(), http.MethodGet, "/v1/pets", key, nil)
		if err != nil {
			t.Fatal(err)
		}
		return status
	}
	key, id := createKey(t, dir, "--plan", "free", "--name", "shop")

	soon := time.Now().Add(2 * time.Second).UTC().Truncate(time.Second).Add(time.Second)
	_, stderr, status := petstore(t, dir, "keys", "expire", id, "--at", soon.Format(time.RFC3339))
	if status != 0 || !strings.Contains(stderr, "API key "+id+" expires at "+soon.Format(time.RFC3339)) {
		t.Fatalf("expire --at: %d %q", status, stderr)
	}
	if got := get(key); got != http.StatusOK {
		t.Fatalf("before its expiry: %d", got)
	}
	time.Sleep(time.Until(soon) + 50*time.Millisecond)
	if got := get(key); got != http.StatusUnauthorized {
		t.Fatalf("after its expiry: %d, want 401", got)
	}
	stdout, stderr, status := petstore(t, dir, "keys", "roll", id)
	if status == 0 || stdout != "" || !strings.Contains(stderr, "the key expired at") {
		t.Errorf("roll of an expired key: %d, stdout %q, stderr %q; want a failure and no key", status, stdout, stderr)
	}

	_, stderr, status = petstore(t, dir, "keys", "expire", id, "--never")
	if status != 0 || !strings.Contains(stderr, "never expires") {
		t.Fatalf("expire --never: %d %q", status, stderr)
	}
	if got := get(key); got != http.StatusOK {
		t.Errorf("after removing the expiry: %d, want 200", got)
	}

	if _, stderr, status := petstore(t, dir, "keys", "revoke", id); status != 0 {
		t.Fatalf("revoke: %d %s", status, stderr)
	}
	stdout, stderr, status = petstore(t, dir, "keys", "roll", id)
	if status == 0 || stdout != "" || !strings.Contains(stderr, "the key is revoked") {
		t.Errorf("roll of a revoked key: %d, stdout %q, stderr %q; want a failure and no key", status, stdout, stderr)
	}
	_, stderr, status = petstore(t, dir, "keys", "expire", id, "--never")
	if status == 0 || !strings.Contains(stderr, "the key is revoked") {
		t.Errorf("expire of a revoked key: %d %q", status, stderr)
	}
	if got := get(key); got != http.StatusUnauthorized {
		t.Errorf("revoked key: %d, want 401", got)
	}

	// A name from before the rule, written straight into the database.
	_, legacyID := createKey(t, dir, "--plan", "free", "--name", "legacy")
	app := core.NewBaseApp(core.BaseAppConfig{DataDir: dir})
	if err := app.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	_, err := app.DB().NewQuery("UPDATE api_keys SET name = {:name} WHERE id = {:id}").
		Bind(map[string]any{"name": "evil\x1b[2J\x00\u202egnp.exe\ttab", "id": legacyID}).Execute()
	app.ResetBootstrapState()
	if err != nil {
		t.Fatal(err)
	}
	stdout, _, status = petstore(t, dir, "keys", "list")
	if status != 0 || strings.ContainsAny(stdout, "\x1b\x00\u202e") ||
		!strings.Contains(stdout, `evil\u001B[2J\u0000\u202Egnp.exe\u0009tab`) {
		t.Errorf("list with a legacy name:\n%q", stdout)
	}
}

// A key issued read-only with `keys create --scopes` lists and is refused on
// create; a roll keeps its scopes, and so do a restart of the server and
// `keys list`.
func TestScopesSurviveRollAndRestart(t *testing.T) {
	dir := t.TempDir()
	key, id := createKey(t, dir, "--plan", "free", "--scopes", "pets:read")
	body := []byte(`{"name": "Rex", "categoryId": 1}`)
	check := func(p *realserver.Process, key, when string) {
		t.Helper()
		ctx := context.Background()
		if status, body, err := p.Do(ctx, http.MethodGet, "/v1/pets", key, nil); err != nil || status != http.StatusOK {
			t.Errorf("%s: list %d %v %s, want 200", when, status, err, body)
		}
		resp, answer, err := p.Exchange(ctx, http.MethodPost, "/v1/pets", key, body, "Content-Type", "application/json")
		if err != nil || resp.StatusCode != http.StatusForbidden || !strings.Contains(string(answer), `"insufficient_scope"`) ||
			resp.Header.Get("WWW-Authenticate") != `Bearer error="insufficient_scope", scope="pets:write"` {
			t.Errorf("%s: create %v %v %s, want 403 insufficient_scope", when, resp, err, answer)
		}
	}
	p := start(t, dir)
	check(p, key, "issued read-only")

	stdout, stderr, status := petstore(t, dir, "keys", "roll", id)
	if status != 0 {
		t.Fatalf("roll: %d %s", status, stderr)
	}
	rolled := strings.TrimSpace(stdout)
	check(p, rolled, "rolled")
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}

	p = start(t, dir)
	check(p, rolled, "after a restart")
	list, _, _ := petstore(t, dir, "keys", "list")
	if !regexp.MustCompile(`(?m)^` + id + `\s.*\sactive\s+pets:read\s`).MatchString(list) {
		t.Errorf("keys list:\n%s\nwant the key active with pets:read", list)
	}
	if n := len(keyRecords(t, dir)); n != 1 {
		t.Errorf("%d keys stored", n)
	}
}
