package api_test

import (
	"testing"

	"petstore/internal/api"
)

// A public URL is kept as given, its scheme and host in lower case; one that
// breaks a rule is refused (testkit/realserver checks each message on the
// built binary).
func TestParseBaseURL(t *testing.T) {
	for raw, want := range map[string]string{
		"":                                "",
		"https://shop.example.org/api/v1": "https://shop.example.org/api/v1",
		"HTTPS://Shop.Example.ORG/api/v1": "https://shop.example.org/api/v1",
		"http://127.0.0.1:8090/v1":        "http://127.0.0.1:8090/v1",
		"http://[::1]:8090/v1":            "http://[::1]:8090/v1",
		"https://petstore_app/a%20b/v1":   "https://petstore_app/a%20b/v1",
		"https://shop.example.org/a/b/v1": "https://shop.example.org/a/b/v1",
	} {
		b, err := api.ParseBaseURL(raw)
		if err != nil || b.Public() != want {
			t.Errorf("%q: %q, %v; want %q", raw, b.Public(), err, want)
		}
	}
	for _, raw := range []string{
		"https://shop.example.org", "https://shop.example.org/", "https://shop.example.org/V1", "https://shop.example.org/v1/pets",
		"https://shop.example.org/v1;x", "https://shop.example.org/a'b/v1", "https://shop.example.org/a b/v1",
		"https://[fe80::1%25eth0]/v1", "https://shop.example.org:99999/v1", "https://-shop.example.org/v1",
		"https://shop..example.org/v1", "mailto:a@b/v1", "//shop.example.org/v1",
		"https://shop.example.org/api/%2e%2e/v1", "https://shop.example.org/api/%2E./v1", "https://shop.example.org/%2e/v1",
		"https://shop.example.org/api%2fx/v1", "https://shop.example.org/api%2F/v1", "https://shop.example.org/api/../v1",
	} {
		if b, err := api.ParseBaseURL(raw); err == nil {
			t.Errorf("%q accepted as %q", raw, b.Public())
		}
	}
}
