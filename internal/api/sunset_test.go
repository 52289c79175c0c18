package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"petstore/internal/api"
	"petstore/internal/apikeys"
	"petstore/testkit/apptest"
)

// From its sunset, getPet answers 410 gone, naming its replacement, with the
// deprecation headers; the request is still counted. The service's clock is
// moved in the test process.
func TestGetPetIsGoneFromItsSunset(t *testing.T) {
	sunset := time.Date(2030, time.December, 5, 0, 0, 0, 0, time.UTC)
	var clock atomic.Pointer[time.Time]
	set := func(t time.Time) { clock.Store(&t) }
	set(sunset.Add(-time.Nanosecond))
	s := apptest.StartWith(t, apptest.Config{Now: func() time.Time { return *clock.Load() }})
	key := s.NewKey(t, apikeys.NewKey{Plan: "free"})
	pet := s.CreatePet(t, key, map[string]any{"name": "Rex", "categoryId": 3})
	petPath := fmt.Sprint("/v1/pets/", pet.ID)

	r := s.Do(t, http.MethodGet, petPath, key, nil)
	if r.StatusCode != http.StatusOK {
		t.Fatalf("the last instant before the sunset: %d %s, want 200", r.StatusCode, r.Body)
	}
	_, remaining := rateHeaders(t, r)

	for _, at := range []time.Time{sunset, sunset.Add(24 * time.Hour), sunset.AddDate(10, 0, 0)} {
		set(at)
		for _, path := range []string{petPath, "/v1/pets/100000000000000", "/v1/pets/abc"} {
			t.Run(at.Format(time.RFC3339)+" "+path, func(t *testing.T) {
				r := s.Do(t, http.MethodGet, path, key, nil)
				e := apptest.ExpectError(t, r, http.StatusGone, api.CodeGone)
				if !strings.Contains(e.Message, "listPets") || !strings.Contains(e.Message, "status") {
					t.Errorf("message %q does not name listPets with the status filter", e.Message)
				}
				if got := r.Header.Get("Sunset"); got != "Thu, 05 Dec 2030 00:00:00 GMT" {
					t.Errorf("Sunset %q", got)
				}
				if got := r.Header.Get("Deprecation"); got != "@1763596800" {
					t.Errorf("Deprecation %q", got)
				}
				if got := r.Header.Values("Link"); len(got) != 1 || got[0] != `</v1/pets>; rel="successor-version"` {
					t.Errorf("Link %q, want the successor /v1/pets", got)
				}
				if _, got := rateHeaders(t, r); got != remaining-1 {
					t.Errorf("X-RateLimit-Remaining %d after %d: the request was not counted", got, remaining)
				}
				remaining--
			})
		}
	}

	// The rest of the API lives on; a caller without a valid key learns
	// nothing new.
	if r := s.Do(t, http.MethodGet, "/v1/pets?status=available", key, nil); r.StatusCode != http.StatusOK {
		t.Errorf("listPets after the sunset: %d %s", r.StatusCode, r.Body)
	}
	apptest.ExpectError(t, s.Do(t, http.MethodGet, petPath, "", nil), http.StatusUnauthorized, api.CodeUnauthorized)
	r = s.Do(t, http.MethodPost, petPath, key, nil)
	apptest.ExpectError(t, r, http.StatusMethodNotAllowed, api.CodeMethodNotAllowed)
}
