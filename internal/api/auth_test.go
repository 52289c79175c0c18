package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"petstore/internal/api"
	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/testkit/apptest"
)

const (
	wwwAuthMissing = `Bearer realm="petstore"`
	wwwAuthInvalid = `Bearer realm="petstore", error="invalid_token"`
)

// operation is one of the three /v1 operations, ready to send.
type operation struct {
	name, method, path, body string
}

// operations are the three operations, getPet on an existing pet so that only
// the credentials can make them fail.
func operations(t *testing.T, s *apptest.Server) []operation {
	t.Helper()
	pet := s.CreatePet(t, s.NewKey(t, apikeys.NewKey{}), map[string]any{"name": "Rex", "categoryId": 1})
	return []operation{
		{"listPets", http.MethodGet, "/v1/pets", ""},
		{"createPet", http.MethodPost, "/v1/pets", `{"name": "Tom", "categoryId": 2}`},
		{"getPet", http.MethodGet, fmt.Sprint("/v1/pets/", pet.ID), ""},
	}
}

// send sends op with the given Authorization header values (none when
// empty) and query.
func (op operation) send(t *testing.T, s *apptest.Server, authorization []string, query string) *apptest.Response {
	t.Helper()
	req, err := http.NewRequest(op.method, s.URL+op.path+query, strings.NewReader(op.body))
	if err != nil {
		t.Fatal(err)
	}
	if op.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, v := range authorization {
		req.Header.Add("Authorization", v)
	}
	return s.Send(t, req)
}

// refused asserts a 401 with the given WWW-Authenticate and, for createPet,
// that nothing was stored.
func refused(t *testing.T, s *apptest.Server, op operation, authorization []string, query, wwwAuth string) {
	t.Helper()
	before := s.CountRecords(t, "pets")
	r := op.send(t, s, authorization, query)
	apptest.ExpectError(t, r, http.StatusUnauthorized, api.CodeUnauthorized)
	if got := r.Header.Values("WWW-Authenticate"); len(got) != 1 || got[0] != wwwAuth {
		t.Errorf("WWW-Authenticate %q, want %q", got, wwwAuth)
	}
	if s.CountRecords(t, "pets") != before {
		t.Errorf("a refused %s stored a pet", op.name)
	}
}

// succeeds asserts that op is served with the given Authorization values.
func succeeds(t *testing.T, s *apptest.Server, op operation, authorization ...string) {
	t.Helper()
	r := op.send(t, s, authorization, "")
	if r.StatusCode != http.StatusOK && r.StatusCode != http.StatusCreated {
		t.Errorf("%s with %q: %d %s", op.name, authorization, r.StatusCode, r.Body)
	}
}

func TestAuthRefusesBadCredentials(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	ops := operations(t, s)

	tests := []struct {
		name          string
		authorization []string
		wwwAuth       string
	}{
		{"no header", nil, wwwAuthMissing},
		{"empty header", []string{""}, wwwAuthMissing},
		{"Basic scheme", []string{"Basic dXNlcjpwYXNz"}, wwwAuthMissing},
		{"key without scheme", []string{key}, wwwAuthMissing},
		// "Bearer " arrives as "Bearer": header values are trimmed on the wire.
		{"Bearer with empty token", []string{"Bearer"}, wwwAuthInvalid},
		{"tab before the key", []string{"Bearer \t" + key}, wwwAuthInvalid},
		{"Bearer with two tokens", []string{"Bearer a b"}, wwwAuthInvalid},
		{"key and more", []string{"Bearer " + key + " x"}, wwwAuthInvalid},
		{"key and comma", []string{"Bearer " + key + ","}, wwwAuthInvalid},
		{"two Authorization headers", []string{"Bearer " + key, "Bearer " + key}, wwwAuthInvalid},
		{"malformed key", []string{"Bearer pet_short"}, wwwAuthInvalid},
		{"key with another prefix", []string{"Bearer sk_" + strings.TrimPrefix(key, apikeys.Prefix)}, wwwAuthInvalid},
		{"unknown well-formed key", []string{"Bearer " + apikeys.Generate()}, wwwAuthInvalid},
		{"hash of the key", []string{"Bearer " + apikeys.Hash(key)}, wwwAuthInvalid},
		{"superuser token", []string{"Bearer " + s.StaffToken(t)}, wwwAuthInvalid},
	}
	for _, op := range ops {
		for _, tt := range tests {
			t.Run(op.name+"/"+tt.name, func(t *testing.T) {
				refused(t, s, op, tt.authorization, "", tt.wwwAuth)
			})
		}
	}

	// The same key in a well-formed header is served, the scheme in any case.
	for _, op := range ops {
		for _, scheme := range []string{"Bearer", "bearer", "BEARER"} {
			succeeds(t, s, op, scheme+" "+key)
		}
	}
}

// Keys are read only from the Authorization header: one in the query string
// is refused, as missing, before the query is looked at.
func TestAuthIgnoresKeysInTheQueryString(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	for _, op := range operations(t, s) {
		for _, param := range []string{"key", "access_token", "api_key", "token"} {
			t.Run(op.name+"/"+param, func(t *testing.T) {
				refused(t, s, op, nil, "?"+param+"="+url.QueryEscape(key), wwwAuthMissing)
			})
		}
	}
}

// Revoking or expiring a key, with the CLI's function or in the dashboard
// (which saves the record), refuses it from the next request on, while the
// server runs.
func TestAuthRevokedAndExpiredKeys(t *testing.T) {
	s := apptest.Start(t, "")
	ops := operations(t, s)

	tests := []struct {
		name    string
		disable func(t *testing.T, key string)
	}{
		{"revoked with apikeys.Revoke", func(t *testing.T, key string) {
			if err := apikeys.Revoke(s.App, s.KeyRecord(t, key).Id, audit.CLI); err != nil {
				t.Fatal(err)
			}
		}},
		{"revoked in the dashboard", func(t *testing.T, key string) {
			r := s.KeyRecord(t, key)
			r.Set(apikeys.RevokedField, true) // as a script written for the former bool field sends it
			if err := s.App.Save(r); err != nil {
				t.Fatal(err)
			}
		}},
		{"expired in the dashboard", func(t *testing.T, key string) {
			r := s.KeyRecord(t, key)
			r.Set(apikeys.ExpiresField, time.Now().Add(-time.Minute))
			if err := s.App.Save(r); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := s.NewKey(t, apikeys.NewKey{Plan: "business", Expires: time.Now().Add(time.Hour)})
			for _, op := range ops {
				succeeds(t, s, op, "Bearer "+key)
			}
			tt.disable(t, key)
			for _, op := range ops {
				refused(t, s, op, []string{"Bearer " + key}, "", wwwAuthInvalid)
			}
		})
	}
}

// A key that expires while nothing is written to the database (its lookup
// kept by apikeys.Finder) is refused from its expiry on.
func TestAuthKeyExpiresWithoutAWrite(t *testing.T) {
	apptest.Slow(t)
	s := apptest.Start(t, "")
	expires := time.Now().Add(time.Second)
	key := s.NewKey(t, apikeys.NewKey{Plan: "business", Expires: expires})
	if r := s.Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != http.StatusOK {
		t.Fatalf("before its expiry: %d", r.StatusCode)
	}
	time.Sleep(time.Until(expires) + 50*time.Millisecond)
	if r := s.Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("after its expiry: %d, want 401", r.StatusCode)
	}
}

// TestBodiesAreNotHTMLEscaped: "<", ">" and "&" reach clients as they are,
// not as \u003c, \u003e and \u0026, in errors and in pets alike.
func TestBodiesAreNotHTMLEscaped(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{})
	missing := s.Do(t, http.MethodGet, "/v1/pets", "", nil)
	created := s.Do(t, http.MethodPost, "/v1/pets", key, map[string]any{"name": "Tom & <Jerry>", "categoryId": 1})
	for name, r := range map[string]*apptest.Response{"401": missing, "201": created} {
		body := string(r.Body)
		if strings.Contains(body, `\u003c`) || strings.Contains(body, `\u003e`) || strings.Contains(body, `\u0026`) {
			t.Errorf("%s body escapes HTML: %s", name, body)
		}
	}
	if !strings.Contains(string(missing.Body), "Bearer <key>") || !strings.Contains(string(created.Body), "Tom & <Jerry>") {
		t.Errorf("bodies: %s %s", missing.Body, created.Body)
	}
}
