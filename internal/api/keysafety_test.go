package api_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"petstore/internal/apikeys"
	"petstore/testkit/apptest"
)

// TestKeysAppearNowhere uses a key on good and bad requests, next to wrong
// keys that share all but its last character, then looks for the key, its
// secret part and its hash in every response and in PocketBase's request
// logs, and for the key and its secret part in the superuser API's api_keys
// records (what the dashboard shows: the hash is shown there, and cannot be
// turned back into the key).
func TestKeysAppearNowhere(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "pro"})
	nearMiss := key[:len(key)-1] + "A" // a wrong key sharing all but the last character
	if strings.HasSuffix(key, "A") {
		nearMiss = key[:len(key)-1] + "B"
	}
	needles := map[string]string{
		"key":  key,
		"hash": apikeys.Hash(key),
		// The secret beyond the displayed prefix, as far as the near misses share it.
		"secret": key[len(apikeys.DisplayPrefix(key)) : len(key)-1],
	}
	checkClean := func(where string, data []byte) {
		t.Helper()
		for what, needle := range needles {
			if what == "hash" && strings.HasPrefix(where, "superuser") {
				continue
			}
			if bytes.Contains(data, []byte(needle)) {
				t.Fatalf("the %s appears in %s: %s", what, where, data)
			}
		}
	}
	checkResponse := func(r *apptest.Response) {
		t.Helper()
		var headers bytes.Buffer
		_ = r.Header.Write(&headers)
		checkClean(r.Request.Method+" "+r.Request.URL.Path+" response", append(headers.Bytes(), r.Body...))
	}

	// Rows expected in the request log: one per request, but the 401s of
	// one address make one row at once (the rest are counted at the
	// minute's end).
	var v1Requests, refused int
	send := func(want int, method, path, key string, body any, header ...string) *apptest.Response {
		t.Helper()
		if want == http.StatusUnauthorized {
			refused++
		} else {
			v1Requests++
		}
		r := s.Do(t, method, path, key, body, header...)
		if r.StatusCode != want {
			t.Fatalf("%s %s: %d, want %d: %s", method, path, r.StatusCode, want, r.Body)
		}
		checkResponse(r)
		return r
	}
	pet := s.CreatePet(t, key, map[string]any{"name": "Rex", "categoryId": 1})
	v1Requests++
	send(http.StatusOK, http.MethodGet, "/v1/pets", key, nil)
	send(http.StatusOK, http.MethodGet, "/v1/pets/"+fmt.Sprint(pet.ID), key, nil)
	send(http.StatusNotFound, http.MethodGet, "/v1/pets/999999999999999", key, nil)
	send(http.StatusBadRequest, http.MethodGet, "/v1/pets?limit=0", key, nil)
	send(http.StatusBadRequest, http.MethodPost, "/v1/pets", key, `{"name":`)
	send(http.StatusMethodNotAllowed, http.MethodDelete, "/v1/pets", key, nil)
	for _, wrong := range []string{nearMiss, key[:len(key)-1], key + "A", strings.ToUpper(key), apikeys.DisplayPrefix(key)} {
		send(http.StatusUnauthorized, http.MethodGet, "/v1/pets", wrong, nil)
		send(http.StatusUnauthorized, http.MethodPost, "/v1/pets", wrong, map[string]any{"name": "Rex", "categoryId": 1})
	}
	for _, auth := range []string{"Bearer " + key + " " + key, "Bearer " + key + "," + nearMiss, "Basic " + key, key} {
		send(http.StatusUnauthorized, http.MethodGet, "/v1/pets", "", nil, "Authorization", auth)
	}

	token := s.StaffToken(t)
	for _, path := range []string{
		"/api/collections/api_keys/records",
		"/api/collections/api_keys/records?fields=*,key_hash",
		"/api/collections/api_keys/records?expand=plan",
	} {
		r := s.Do(t, http.MethodGet, path, "", nil, "Authorization", token)
		if r.StatusCode != http.StatusOK || !bytes.Contains(r.Body, []byte(apikeys.DisplayPrefix(key))) {
			t.Fatalf("superuser %s: %d %s; want the key's record", path, r.StatusCode, r.Body)
		}
		var headers bytes.Buffer
		_ = r.Header.Write(&headers)
		checkClean("superuser "+path, append(headers.Bytes(), r.Body...))
	}

	for _, e := range waitForLogs(t, s, v1Requests+min(refused, 1)) {
		checkClean("the request log", []byte(e.raw))
	}
}
