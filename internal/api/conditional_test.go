package api_test

import (
	"database/sql"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/internal/categories"
	"petstore/testkit/apptest"
)

// strongTag is the ETag every tagged read sends.
var strongTag = regexp.MustCompile(`^"[0-9a-f]{16}"$`)

// tagged is a 200 of a tagged read: its ETag, which it checks.
func tagged(t *testing.T, what string, r *apptest.Response) string {
	t.Helper()
	etag := r.Header.Get("ETag")
	if r.StatusCode != http.StatusOK || !strongTag.MatchString(etag) || r.Header.Get("Cache-Control") != "private, no-cache" {
		t.Fatalf("%s: %d, ETag %q, Cache-Control %q: %s; want 200 with a strong ETag, private, no-cache",
			what, r.StatusCode, etag, r.Header.Get("Cache-Control"), r.Body)
	}
	return etag
}

// notModified checks that r is a 304 with etag, no body, and the headers
// every answer carries.
func notModified(t *testing.T, what string, r *apptest.Response, etag string) {
	t.Helper()
	if r.StatusCode != http.StatusNotModified || len(r.Body) != 0 || r.Header.Get("ETag") != etag {
		t.Fatalf("%s: %d, ETag %q, body %q; want 304 with ETag %s and no body", what, r.StatusCode, r.Header.Get("ETag"), r.Body, etag)
	}
	for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Request-Id", "X-Request-Id"} {
		if r.Header.Get(h) == "" {
			t.Errorf("%s: the 304 has no %s", what, h)
		}
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		t.Errorf("%s: the 304 has Content-Type %q, the metadata of a body it does not have", what, ct)
	}
}

// Each tagged read answers 200 with an ETag, then 304 to the same request
// naming it, until a commit changes what it shows: then 200 with a new tag.
func TestConditionalReads(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{})
	pet := s.CreatePet(t, key, map[string]any{"name": "Rex", "categoryId": 3})
	if _, err := categories.Create(s.App, 3, "Dogs", "", audit.CLI); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, path string
		commit     func(t *testing.T)
	}{
		{"listPets", "/v1/pets", func(t *testing.T) { s.CreatePet(t, key, map[string]any{"name": "Tom", "categoryId": 3}) }},
		{"getPet", fmt.Sprint("/v1/pets/", pet.ID), func(t *testing.T) {
			if _, err := s.App.NonconcurrentDB().NewQuery(fmt.Sprintf("UPDATE pets SET name = 'Rex II' WHERE id = '%d'", pet.ID)).Execute(); err != nil {
				t.Fatal(err)
			}
		}},
		{"listCategories", "/v1/categories", func(t *testing.T) {
			if _, err := categories.Rename(s.App, 3, "Hounds", audit.CLI); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			first := s.Do(t, http.MethodGet, tt.path, key, nil)
			etag := tagged(t, "first read", first)
			again := s.Do(t, http.MethodGet, tt.path, key, nil, "If-None-Match", etag)
			notModified(t, "If-None-Match with its ETag", again, etag)
			if again.Header.Get("X-RateLimit-Remaining") == first.Header.Get("X-RateLimit-Remaining") {
				t.Errorf("the 304 left X-RateLimit-Remaining at %s: a 304 counts as a request", first.Header.Get("X-RateLimit-Remaining"))
			}
			head := s.Do(t, http.MethodHead, tt.path, key, nil, "If-None-Match", etag)
			notModified(t, "HEAD with its ETag", head, etag)

			tt.commit(t)
			changed := s.Do(t, http.MethodGet, tt.path, key, nil, "If-None-Match", etag)
			newTag := tagged(t, "after a commit", changed)
			if newTag == etag || string(changed.Body) == string(first.Body) {
				t.Fatalf("after a commit: ETag %s and body %s, as before", newTag, changed.Body)
			}
			notModified(t, "the new ETag", s.Do(t, http.MethodGet, tt.path, key, nil, "If-None-Match", newTag), newTag)
		})
	}
}

// If-None-Match matches by the weak comparison, in any element of a list,
// over several field lines, and "*" matches any answer; a malformed field
// is ignored (200), never an error.
func TestIfNoneMatchForms(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{})
	s.CreatePet(t, key, map[string]any{"name": "Rex", "categoryId": 3})
	etag := tagged(t, "listPets", s.Do(t, http.MethodGet, "/v1/pets", key, nil))
	for _, tt := range []struct {
		name   string
		header []string
		status int
	}{
		{"its tag", []string{"If-None-Match", etag}, http.StatusNotModified},
		{"weak", []string{"If-None-Match", "W/" + etag}, http.StatusNotModified},
		{"in a list", []string{"If-None-Match", `"a", W/"b" ,` + etag + ", "}, http.StatusNotModified},
		{"over two lines", []string{"If-None-Match", `"a"`, "If-None-Match", etag}, http.StatusNotModified},
		{"star", []string{"If-None-Match", " * "}, http.StatusNotModified},
		{"another tag", []string{"If-None-Match", `"0123456789abcdef"`}, http.StatusOK},
		{"unquoted", []string{"If-None-Match", etag[1 : len(etag)-1]}, http.StatusOK},
		{"unterminated", []string{"If-None-Match", etag + `, "abc`}, http.StatusOK},
		{"star in a list", []string{"If-None-Match", "*, " + etag}, http.StatusOK},
		{"junk after a tag", []string{"If-None-Match", etag + "x"}, http.StatusOK},
		{"malformed line beside a match", []string{"If-None-Match", etag, "If-None-Match", "nonsense"}, http.StatusOK},
		{"empty", []string{"If-None-Match", ""}, http.StatusOK},
		{"lowercase w", []string{"If-None-Match", "w/" + etag}, http.StatusOK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := s.Do(t, http.MethodGet, "/v1/pets", key, nil, tt.header...)
			if r.StatusCode != tt.status || r.Header.Get("ETag") != etag {
				t.Fatalf("%q: %d, ETag %q: %s; want %d with %s", tt.header, r.StatusCode, r.Header.Get("ETag"), r.Body, tt.status, etag)
			}
		})
	}
}

// A tag names one request's answer: queries asking for another page, or
// other pets, have other tags; queries asking for the same answer share
// one. A page with a next one keeps its tag while pets are appended after
// every other, which cannot change it; the last page's moves then, and only
// with a change of the pets.
func TestEntityTagsFollowTheQuery(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{})
	for _, name := range []string{"Rex", "Tom", "Kit"} {
		s.CreatePet(t, key, map[string]any{"name": name, "categoryId": 3, "status": "available"})
	}
	read := func(path string) *apptest.Response { return s.Do(t, http.MethodGet, path, key, nil) }
	all := tagged(t, "all", read("/v1/pets"))
	if same := tagged(t, "limit=20", read("/v1/pets?limit=20")); same != all {
		t.Errorf("limit=20, the default, has ETag %s; no limit has %s", same, all)
	}
	firstPage := read("/v1/pets?limit=2")
	tags := map[string]string{"all": all, "limit=2": tagged(t, "limit=2", firstPage),
		"status": tagged(t, "status", read("/v1/pets?status=sold")), "limit=1": tagged(t, "limit=1", read("/v1/pets?limit=1"))}
	seen := map[string]string{}
	for query, tag := range tags {
		if other, ok := seen[tag]; ok {
			t.Errorf("%s and %s share ETag %s", query, other, tag)
		}
		seen[tag] = query
	}

	if _, err := categories.Create(s.App, 3, "Dogs", "", audit.CLI); err != nil {
		t.Fatal(err)
	}
	notModified(t, "the last page after a commit elsewhere", s.Do(t, http.MethodGet, "/v1/pets", key, nil, "If-None-Match", all), all)
	s.CreatePet(t, key, map[string]any{"name": "Max", "categoryId": 3})
	notModified(t, "a page with a next one, after an append", s.Do(t, http.MethodGet, "/v1/pets?limit=2", key, nil, "If-None-Match", tags["limit=2"]), tags["limit=2"])
	if r := s.Do(t, http.MethodGet, "/v1/pets", key, nil, "If-None-Match", all); r.StatusCode != http.StatusOK {
		t.Errorf("the last page after an append: %d, want 200 with the new pet", r.StatusCode)
	}
}

// A tag does not outlive the process that made it. The data version's
// numbers count from each start, so the same numbers may name another
// state after a restart on data replaced meanwhile (a restore to an older
// copy, a cluster's new leader missing the old one's last writes): here the
// pet is renamed while the service is stopped, and both processes read
// their first version after the pets last changed. The epoch drawn at each
// start tells the two apart: the tag from before is answered 200, with the
// new name, never 304.
func TestEntityTagsChangeWithTheProcess(t *testing.T) {
	dir := t.TempDir()
	s := apptest.Start(t, dir)
	key := s.NewKey(t, apikeys.NewKey{})
	rename := func(name string) {
		t.Helper()
		db, err := sql.Open("sqlite", filepath.Join(dir, "data.db")+"?_pragma=busy_timeout(10000)")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec("INSERT OR REPLACE INTO pets (id, name, categoryId, status) VALUES ('100000000000001', ?, 3, 'available')", name); err != nil {
			t.Fatal(err)
		}
	}
	rename("Rex") // before the first /v1 request, the first read of the data version
	before := s.Do(t, http.MethodGet, "/v1/pets/100000000000001", key, nil)
	etag := tagged(t, "before the restart", before)
	s.Stop(t)
	rename("Max")

	s = apptest.Start(t, dir)
	after := s.Do(t, http.MethodGet, "/v1/pets/100000000000001", key, nil, "If-None-Match", etag)
	if tagged(t, "after the restart, with the tag from before", after) == etag || !strings.Contains(string(after.Body), "Max") {
		t.Fatalf("after a restart on changed data: ETag %s (before: %s), %s", after.Header.Get("ETag"), etag, after.Body)
	}
}
