package realserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"petstore/testkit/redistest"
)

// TestJSONLogsHoldNoSecret runs the binary with --log-format json and
// --access-log against a Redis with a password, uses a key, a wrong key, a
// wrong and a right superuser password, then stops it. Every line the
// server wrote is one JSON object with time, level and msg, the access log
// has the requests, and no key, password, token or Redis password appears
// anywhere.
func TestJSONLogsHoldNoSecret(t *testing.T) {
	redistest.Require(t)
	const redisPassword = "redis-secret-4f9a1c"
	// The default user has no password, so Redis accepts any: the URL
	// still carries one, as a managed Redis's does.
	redis := redistest.Start(t)
	dir := t.TempDir()
	const staffPassword = "a long enough password"
	if _, stderr, status := petstore(t, dir, "superuser", "upsert", "staff@example.com", staffPassword); status != 0 {
		t.Fatalf("superuser upsert: %d %s", status, stderr)
	}
	key, keyID := createKey(t, dir, "--plan", "free")
	p := start(t, dir, "--log-format", "json", "--access-log",
		"--ratelimit-redis", "redis://default:"+redisPassword+"@"+redis.Addr+"/0")
	ctx := context.Background()

	if status, body, err := p.Do(ctx, http.MethodGet, "/v1/pets", key, nil); status != http.StatusOK {
		t.Fatalf("list: %d %v %s", status, err, body)
	}
	if status, body, err := p.Do(ctx, http.MethodPost, "/v1/pets", key, []byte(`{"name":"Rex","categoryId":1}`)); status != http.StatusCreated {
		t.Fatalf("create: %d %v %s", status, err, body)
	}
	const wrongKey = "pet_wrongwrongwrongwrongwrongwrongwrongwrong1"
	if status, _, _ := p.Do(ctx, http.MethodGet, "/v1/pets", wrongKey, nil); status != http.StatusUnauthorized {
		t.Fatalf("a wrong key: %d, want 401", status)
	}
	const wrongPassword = "not-the-password-7c2e"
	p.Do(ctx, http.MethodPost, "/api/collections/_superusers/auth-with-password", "",
		[]byte(`{"identity":"staff@example.com","password":"`+wrongPassword+`"}`))
	status, body, err := p.Do(ctx, http.MethodPost, "/api/collections/_superusers/auth-with-password", "",
		[]byte(`{"identity":"staff@example.com","password":"`+staffPassword+`"}`))
	var auth struct{ Token string }
	if status != http.StatusOK || json.Unmarshal(body, &auth) != nil || auth.Token == "" {
		t.Fatalf("superuser auth: %d %v %s", status, err, body)
	}
	p.Exchange(ctx, http.MethodGet, "/api/petstore/keys", "", nil, "Authorization", auth.Token)
	if _, stderr, status := petstore(t, dir, "keys", "revoke", keyID); status != 0 {
		t.Fatalf("keys revoke: %d %s", status, stderr)
	}
	if status, _, _ := p.Do(ctx, http.MethodGet, "/v1/pets", key, nil); status != http.StatusUnauthorized {
		t.Fatalf("the revoked key: %d, want 401", status)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}

	out := p.Output()
	for _, secret := range []string{key, key[:12], wrongKey, staffPassword, wrongPassword, auth.Token, redisPassword, "Bearer"} {
		if strings.Contains(out, secret) {
			t.Errorf("the server's output holds the secret %q", secret)
		}
	}
	var started, stopped bool
	requests := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var event map[string]any
		if err := json.Unmarshal([]byte(line), &event); err != nil {
			t.Errorf("not a JSON object: %q", line)
			continue
		}
		for _, field := range []string{"time", "level", "msg"} {
			if _, ok := event[field]; !ok {
				t.Errorf("no %s in %q", field, line)
			}
		}
		switch event["msg"] {
		case "petstore started":
			started = event["dataDir"] == dir
		case "petstore stopped serving":
			stopped = true
		case "Request":
			if path, _ := event["path"].(string); path == "/v1/pets" {
				requests++
			}
		}
	}
	if !started || !stopped {
		t.Errorf("start event naming the data directory %v, stop event %v:\n%s", started, stopped, out)
	}
	if requests != 4 {
		t.Errorf("%d access log lines for /v1/pets, want 4:\n%s", requests, out)
	}
}
