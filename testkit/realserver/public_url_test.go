package realserver_test

import (
	"context"
	"errors"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"petstore/testkit/realserver"
)

// serve refuses a public URL that is not an absolute http(s) URL ending in
// /v1 without query or fragment, from the flag or the environment: exit
// status 1 and a message saying what is wrong, before serving anything.
func TestServeRefusesABadPublicURL(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		url, why string
	}{
		{"shop.example.org/api/v1", "it must be an absolute http or https URL"},
		{"ftp://shop.example.org/api/v1", "it must be an absolute http or https URL"},
		{"/api/v1", "it must be an absolute http or https URL"},
		{"https://shop.example.org/api", "its path must end in /v1, the version segment"},
		{"https://shop.example.org/api/v1/", "its path must end in /v1, the version segment"},
		{"https://shop.example.org/api/xv1", "its path must end in /v1, the version segment"},
		{"https://shop.example.org/api/v1?key=1", "it must have no query or fragment"},
		{"https://shop.example.org/api/v1?", "it must have no query or fragment"},
		{"https://shop.example.org/api/v1#top", "it must have no query or fragment"},
		{"https://user:secret@shop.example.org/v1", "it must not hold a user name or password"},
		{"https://shop.example.org/a//v1", `its path must have no empty, "." or ".." segment`},
		{"https://shop.example.org/a/../v1", `its path must have no empty, "." or ".." segment`},
		{"https://shop.example.org/api/%2e%2e/v1", `its path must have no empty, "." or ".." segment, escaped or not`},
		{"https://shop.example.org/api/%2E%2E/v1", `its path must have no empty, "." or ".." segment, escaped or not`},
		{"https://shop.example.org/api/.%2E/v1", `its path must have no empty, "." or ".." segment, escaped or not`},
		{"https://shop.example.org/api/%2e/v1", `its path must have no empty, "." or ".." segment, escaped or not`},
		{"https://shop.example.org/api%2Fx/v1", `its path must have no escaped "/" (%2F)`},
		{"https://shop.example.org/api%2f..%2fadmin/v1", `its path must have no escaped "/" (%2F)`},
		{"https://shop.example.org/$x/v1", `its path may hold only letters, digits`},
		{"https://shop!example.org/v1", "its host must be a DNS name or an IP address"},
		{"https://shop.example.org:/v1", "its host must be a DNS name or an IP address"},
		{"https://%zz/v1", "it is not a URL"},
	} {
		t.Run(tt.url, func(t *testing.T) {
			want := `Error: invalid --public-url (or PETSTORE_PUBLIC_URL) "` + tt.url + `": ` + tt.why
			_, stderr, err := realserver.Run(bin, dir, "serve", "--http", "127.0.0.1:0", "--public-url", tt.url)
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stderr, want) {
				t.Errorf("serve --public-url %q: %v; stderr %q; want exit status 1 and %q", tt.url, err, stderr, want)
			}
		})
	}
	t.Run("environment", func(t *testing.T) {
		t.Setenv("PETSTORE_PUBLIC_URL", "https://shop.example.org/api")
		_, stderr, err := realserver.Run(bin, dir, "serve", "--http", "127.0.0.1:0")
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stderr, "its path must end in /v1") {
			t.Errorf("PETSTORE_PUBLIC_URL: %v; stderr %q; want exit status 1 and the reason", err, stderr)
		}
	})
}

// With a public URL, the banner shows it and the built binary's Location
// and served document name it; the flag wins over the environment. A CORS
// preflight allows the path's methods only to the origins --origins allows.
func TestServeWithAPublicURL(t *testing.T) {
	const public = "https://shop.example.org/api/v1"
	t.Setenv("PETSTORE_PUBLIC_URL", "https://other.example.org/v1")
	dir := t.TempDir()
	key, _ := createKey(t, dir, "--plan", "free")
	p := start(t, dir, "--public-url", "https://Shop.example.org/api/v1", "--origins", "https://allowed.test")

	if out := p.Output(); !strings.Contains(out, "├─ Public API:  "+public+"/pets ") {
		t.Errorf("the banner does not show the public URL:\n%s", out)
	}
	resp, body, err := p.Exchange(context.Background(), http.MethodPost, "/v1/pets", key, []byte(`{"name":"Rex","categoryId":1}`))
	if err != nil || resp.StatusCode != http.StatusCreated || !strings.HasPrefix(resp.Header.Get("Location"), public+"/pets/") {
		t.Fatalf("create: %v %v %s; want 201 with Location under %s", err, resp, body, public)
	}
	// The copy for tools names the public URL's path as its server (a
	// generator bakes no host in) and the public URL in its samples; the
	// reference page's copy names the public URL in both.
	_, body, err = p.Exchange(context.Background(), http.MethodGet, "/v1/openapi.yaml", "", nil)
	if err != nil || !strings.Contains(string(body), "servers:\n  - url: /api/v1\n") || !strings.Contains(string(body), `"`+public+`/pets`) {
		t.Errorf("openapi.yaml: %v; does not name /api/v1 as its server and %s in its samples", err, public)
	}
	_, body, err = p.Exchange(context.Background(), http.MethodGet, "/docs/openapi.json", "", nil)
	if err != nil || !strings.Contains(string(body), `"servers":[{"description":"This service","url":"`+public+`"}]`) {
		t.Errorf("/docs/openapi.json: %v; does not name %s as its server", err, public)
	}

	for origin, methods := range map[string]string{"https://allowed.test": "GET, HEAD, POST", "https://elsewhere.test": ""} {
		req, err := http.NewRequest(http.MethodOptions, p.URL+"/v1/pets", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", http.MethodPut)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Access-Control-Allow-Methods"); resp.StatusCode != http.StatusNoContent || got != methods {
			t.Errorf("preflight from %s: %d, Access-Control-Allow-Methods %q; want 204, %q", origin, resp.StatusCode, got, methods)
		}
	}
}
