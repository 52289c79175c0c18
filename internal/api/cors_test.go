package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"petstore/internal/apikeys"
	"petstore/testkit/apptest"
)

// A CORS preflight allows exactly the methods of its path, those its Allow
// header lists; an unknown path allows none, so that a browser sends only
// the methods CORS always allows, and its client reads the 404. The origin
// is still PocketBase's to allow (serve --origins, default all).
func TestPreflightAllowsThePathsMethods(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{})
	pet := s.CreatePet(t, key, map[string]any{"name": "Rex", "categoryId": 1})

	preflight := func(t *testing.T, path, method string) *apptest.Response {
		t.Helper()
		r := s.Do(t, http.MethodOptions, path, "", nil, "Origin", "https://shop.test",
			"Access-Control-Request-Method", method, "Access-Control-Request-Headers", "authorization")
		if r.StatusCode != http.StatusNoContent || r.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("preflight of %s %s: %d, Access-Control-Allow-Origin %q", method, path, r.StatusCode, r.Header.Get("Access-Control-Allow-Origin"))
		}
		return r
	}
	for _, path := range []string{"/v1/pets", fmt.Sprint("/v1/pets/", pet.ID), "/v1/openapi.json", "/v1/openapi.yaml"} {
		allow := s.Do(t, http.MethodDelete, path, key, nil).Header.Get("Allow")
		if allow == "" {
			t.Fatalf("DELETE %s: no Allow", path)
		}
		for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
			r := preflight(t, path, method)
			if got := r.Header.Values("Access-Control-Allow-Methods"); len(got) != 1 || got[0] != allow {
				t.Errorf("preflight of %s %s allows %q, want Allow's %q", method, path, got, allow)
			}
		}
	}
	for _, path := range []string{"/v1/nowhere", "/v1", "/v1//pets"} {
		if got := preflight(t, path, http.MethodGet).Header.Values("Access-Control-Allow-Methods"); len(got) != 0 {
			t.Errorf("preflight of unknown path %s allows %q, want no method", path, got)
		}
	}

	// Not a preflight: no CORS methods are listed, and Allow names the
	// path's methods.
	for path, allow := range map[string]string{"/v1/pets": "GET, HEAD, POST, OPTIONS", fmt.Sprint("/v1/pets/", pet.ID): "GET, HEAD, OPTIONS",
		"/v1/categories": "GET, HEAD, OPTIONS", "/v1/usage": "GET, HEAD, OPTIONS", "/v1/nowhere": "OPTIONS"} {
		r := s.Do(t, http.MethodOptions, path, "", nil)
		if r.StatusCode != http.StatusNoContent || r.Header.Get("Access-Control-Allow-Methods") != "" || r.Header.Get("Allow") != allow {
			t.Errorf("OPTIONS %s without Origin: %d, Access-Control-Allow-Methods %q, Allow %q; want 204, none, %q",
				path, r.StatusCode, r.Header.Get("Access-Control-Allow-Methods"), r.Header.Get("Allow"), allow)
		}
	}
	// The request after the preflight reads its answer.
	r := s.Do(t, http.MethodGet, "/v1/pets", key, nil, "Origin", "https://shop.test")
	if r.StatusCode != http.StatusOK || r.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("GET with Origin: %d, Access-Control-Allow-Origin %q", r.StatusCode, r.Header.Get("Access-Control-Allow-Origin"))
	}
}

// An answer to a CORS request names the headers a browser may read across
// origins, whatever its status; an answer to any other request does not
// (its client reads every header).
func TestCORSAnswersExposeTheirHeaders(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{})
	for _, c := range []struct {
		what, method, key string
		body              any
		status            int
	}{
		{"a list", http.MethodGet, key, nil, http.StatusOK},
		{"a create", http.MethodPost, key, map[string]any{"name": "Rex", "categoryId": 1}, http.StatusCreated},
		{"a request without a key", http.MethodGet, "", nil, http.StatusUnauthorized},
	} {
		r := s.Do(t, c.method, "/v1/pets", c.key, c.body, "Origin", "https://shop.test")
		if r.StatusCode != c.status {
			t.Fatalf("%s with Origin: %d, want %d: %s", c.what, r.StatusCode, c.status, r.Body)
		}
		exposed := r.Header.Get("Access-Control-Expose-Headers")
		for _, name := range []string{"X-RateLimit-Remaining", "RateLimit", "Retry-After", "Link", "Location", "Request-Id", "WWW-Authenticate"} {
			if !strings.Contains(exposed, name) {
				t.Errorf("%s with Origin: %s is not exposed to browsers: %q", c.what, name, exposed)
			}
		}
		r = s.Do(t, c.method, "/v1/pets", c.key, c.body)
		if r.StatusCode != c.status {
			t.Fatalf("%s: %d, want %d: %s", c.what, r.StatusCode, c.status, r.Body)
		}
		if got := r.Header.Get("Access-Control-Expose-Headers"); got != "" {
			t.Errorf("%s without Origin: Access-Control-Expose-Headers %q, want none", c.what, got)
		}
	}
}
