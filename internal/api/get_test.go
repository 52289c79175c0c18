package api_test

import (
	"database/sql"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"petstore/internal/api"
	"petstore/internal/apikeys"
	"petstore/internal/pets"
	"petstore/testkit/apptest"
)

func TestGetPetStatuses(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{})
	pet := s.CreatePet(t, key, map[string]any{"name": "Rex", "categoryId": 3, "status": "pending"})

	r := s.Do(t, http.MethodGet, fmt.Sprint("/v1/pets/", pet.ID), key, nil)
	var got pets.Pet
	r.JSON(t, &got)
	if r.StatusCode != http.StatusOK || got != pet || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("get: %d %q %s, want 200 with %+v", r.StatusCode, r.Header.Get("Content-Type"), r.Body, pet)
	}

	for _, id := range []string{
		"100000000000000",     // the smallest id the service assigns, not assigned here
		"5",                   // a valid int64 the service never assigns
		"9007199254740991",    // the largest id the service assigns, 2^53-1
		"9007199254740992",    // an int64 beyond it
		"9223372036854775807", // the largest int64
		"0", "-1",             // int64s, as the spec declares petId
		"-9223372036854775808", // the smallest int64
	} {
		r := s.Do(t, http.MethodGet, "/v1/pets/"+id, key, nil)
		e := apptest.ExpectError(t, r, http.StatusNotFound, api.CodeNotFound)
		if !strings.Contains(e.Message, id) {
			t.Errorf("404 message %q does not name the id", e.Message)
		}
	}

	for _, id := range []string{"abc", "1.5", "9223372036854775808", "-9223372036854775809", "99999999999999999999", "007", "-0", "%2B5", "1e3", "%20" + fmt.Sprint(pet.ID)} {
		r := s.Do(t, http.MethodGet, "/v1/pets/"+id, key, nil)
		e := apptest.ExpectError(t, r, http.StatusBadRequest, api.CodeInvalidRequest)
		if !strings.Contains(e.Message, "petId") {
			t.Errorf("petId %s: message %q does not name petId", id, e.Message)
		}
	}

	r = s.Do(t, http.MethodGet, fmt.Sprint("/v1/pets/", pet.ID, "?fields=id"), key, nil)
	apptest.ExpectError(t, r, http.StatusBadRequest, api.CodeInvalidRequest)
}

// Every answer of the deprecated getPet carries the deprecation headers, the
// errors too.
func TestGetPetDeprecationHeaders(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{})
	pet := s.CreatePet(t, key, map[string]any{"name": "Rex", "categoryId": 3})

	for _, tt := range []struct {
		name, path, key string
		status          int
	}{
		{"found", fmt.Sprint("/v1/pets/", pet.ID), key, http.StatusOK},
		{"absent", "/v1/pets/100000000000000", key, http.StatusNotFound},
		{"bad id", "/v1/pets/abc", key, http.StatusBadRequest},
		{"no key", fmt.Sprint("/v1/pets/", pet.ID), "", http.StatusUnauthorized},
		{"unknown key", fmt.Sprint("/v1/pets/", pet.ID), apikeys.Generate(), http.StatusUnauthorized},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := s.Do(t, http.MethodGet, tt.path, tt.key, nil)
			if r.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", r.StatusCode, tt.status, r.Body)
			}
			dep := r.Header.Get("Deprecation")
			at, err := strconv.ParseInt(strings.TrimPrefix(dep, "@"), 10, 64)
			if !strings.HasPrefix(dep, "@") || err != nil || !time.Unix(at, 0).Before(time.Now()) {
				t.Errorf("Deprecation %q, want @<unix seconds> in the past", dep)
			}
			if got := r.Header.Get("Sunset"); got != "Thu, 05 Dec 2030 00:00:00 GMT" {
				t.Errorf("Sunset %q", got)
			}
			if got := r.Header.Values("Link"); len(got) != 1 || got[0] != `</v1/pets>; rel="successor-version"` {
				t.Errorf("Link %q, want the successor /v1/pets", got)
			}
		})
	}

	// Only getPet is deprecated.
	r := s.Do(t, http.MethodGet, "/v1/pets", key, nil)
	if r.Header.Get("Deprecation") != "" || r.Header.Get("Sunset") != "" {
		t.Errorf("listPets carries deprecation headers: %v", r.Header)
	}
}

// getPet keeps answers while no existing pet changes (a create does not
// change one); a change made elsewhere (here another pool, as the
// dashboard, the CLI or another instance would), an update, a replace or a
// delete, is in the next answer.
func TestGetPetSeesChangesFromElsewhere(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	rex := s.CreatePet(t, key, map[string]any{"name": "Rex", "categoryId": 1})
	path := fmt.Sprint("/v1/pets/", rex.ID)
	get := func() (int, pets.Pet) {
		t.Helper()
		r := s.Do(t, http.MethodGet, path, key, nil)
		var pet pets.Pet
		if r.StatusCode == http.StatusOK {
			r.JSON(t, &pet)
		}
		return r.StatusCode, pet
	}
	get()
	if status, pet := get(); status != http.StatusOK || pet != rex { // served from the kept answer
		t.Fatalf("get: %d %+v, want 200 %+v", status, pet, rex)
	}

	other, err := sql.Open("sqlite", filepath.Join(s.Dir, "data.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Exec("UPDATE pets SET name = 'Tom', status = 'sold' WHERE id = ?", strconv.FormatInt(rex.ID, 10)); err != nil {
		t.Fatal(err)
	}
	want := pets.Pet{ID: rex.ID, Name: "Tom", CategoryID: rex.CategoryID, Status: "sold"}
	if status, pet := get(); status != http.StatusOK || pet != want {
		t.Fatalf("after an update elsewhere: %d %+v, want 200 %+v", status, pet, want)
	}
	s.CreatePet(t, key, map[string]any{"name": "Bo", "categoryId": 1})
	if _, err := other.Exec("REPLACE INTO pets (id, name, categoryId, status) VALUES (?, 'Max', 2, 'pending')", strconv.FormatInt(rex.ID, 10)); err != nil {
		t.Fatal(err)
	}
	want = pets.Pet{ID: rex.ID, Name: "Max", CategoryID: 2, Status: "pending"}
	if status, pet := get(); status != http.StatusOK || pet != want {
		t.Fatalf("after a replace elsewhere: %d %+v, want 200 %+v", status, pet, want)
	}
	if _, err := other.Exec("DELETE FROM pets WHERE id = ?", strconv.FormatInt(rex.ID, 10)); err != nil {
		t.Fatal(err)
	}
	if status, _ := get(); status != http.StatusNotFound {
		t.Fatalf("after a delete elsewhere: %d, want 404", status)
	}
}
