package api_test

import (
	"database/sql"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/api"
	"petstore/internal/apikeys"
	"petstore/internal/pets"
	"petstore/testkit/apptest"
)

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func TestListPetsRejectsBadQueries(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{})
	s.CreatePet(t, key, map[string]any{"name": "Rex", "categoryId": 1})

	tests := []struct {
		name, query, mention string
	}{
		{"limit zero", "limit=0", "limit"},
		{"limit over max", "limit=101", "limit"},
		{"limit huge", "limit=99999999999999999999", "limit"},
		{"limit word", "limit=abc", "limit"},
		{"limit fraction", "limit=1.5", "limit"},
		{"limit plus sign", "limit=%2B5", "limit"},
		{"limit leading zero", "limit=007", "limit"},
		{"limit empty", "limit=", "limit"},
		{"limit negative", "limit=-1", "limit"},
		{"limit with space", "limit=%205", "limit"},
		{"limit repeated", "limit=1&limit=2", "limit"},
		{"status bogus", "status=bogus", "status"},
		{"status wrong case", "status=Available", "status"},
		{"status empty", "status=", "status"},
		{"status repeated", "status=sold&status=pending", "status"},
		{"cursor garbage", "cursor=%21%21%21", "cursor"},
		{"cursor empty", "cursor=", "cursor"},
		{"cursor base64 of text", "cursor=" + b64("hello"), "cursor"},
		{"cursor short id", "cursor=" + b64("1:12345"), "cursor"},
		{"cursor other version", "cursor=" + b64("2:100000000000000"), "cursor"},
		{"cursor padded", "cursor=" + url.QueryEscape(base64.URLEncoding.EncodeToString([]byte("1:100000000000000"))), "cursor"},
		{"unknown parameter", "foo=1", "foo"},
		{"parameter name case", "Limit=5", "Limit"},
		{"offset paging", "offset=20", "offset"},
		{"page paging", "page=2", "page"},
		{"fields picker", "fields=id", "fields"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := s.Do(t, http.MethodGet, "/v1/pets?"+tt.query, key, nil)
			e := apptest.ExpectError(t, r, http.StatusBadRequest, api.CodeInvalidRequest)
			if !strings.Contains(e.Message, tt.mention) {
				t.Errorf("message %q does not name %q", e.Message, tt.mention)
			}
		})
	}
}

func TestListPetsAcceptsLimitBounds(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	for i := range 3 {
		s.CreatePet(t, key, map[string]any{"name": fmt.Sprint("pet", i), "categoryId": 1})
	}
	for _, tt := range []struct {
		query string
		want  int
		next  bool
	}{
		{"limit=1", 1, true},
		{"limit=2&status=available", 2, true},
		{"limit=3", 3, false},
		{"limit=100", 3, false},
		{"", 3, false},
		{"status=sold", 0, false},
	} {
		r := s.Do(t, http.MethodGet, "/v1/pets?"+tt.query, key, nil)
		if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: %d %q %s", tt.query, r.StatusCode, r.Header.Get("Content-Type"), r.Body)
		}
		var page []pets.Pet
		r.JSON(t, &page)
		if len(page) != tt.want || (r.Header.Get("Link") != "") != tt.next {
			t.Errorf("%s: %d pets, Link %q; want %d, next link %v", tt.query, len(page), r.Header.Get("Link"), tt.want, tt.next)
		}
	}
}

// The next link's cursor continues after the last pet of the page; a cursor
// for a pet id that no longer exists still works, since it is a position.
func TestListPetsCursorIsAPosition(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	var ids []int64
	for i := range 3 {
		ids = append(ids, s.CreatePet(t, key, map[string]any{"name": fmt.Sprint("pet", i), "categoryId": 1}).ID)
	}
	r := s.Do(t, http.MethodGet, "/v1/pets?limit=1", key, nil)
	var first []pets.Pet
	r.JSON(t, &first)
	next := nextLink(t, r.Header.Get("Link"))

	record, err := s.App.FindRecordById("pets", fmt.Sprint(first[0].ID))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.App.Delete(record); err != nil {
		t.Fatal(err)
	}
	r = s.Do(t, http.MethodGet, strings.Replace(next, "limit=1", "limit=5", 1), key, nil)
	var rest []pets.Pet
	r.JSON(t, &rest)
	if r.StatusCode != http.StatusOK || len(rest) != len(ids)-1 {
		t.Fatalf("after deleting the cursor's pet: %d %s, want the %d others", r.StatusCode, r.Body, len(ids)-1)
	}
	for _, p := range rest {
		if p.ID <= first[0].ID {
			t.Errorf("pet %d is not after the cursor's %d", p.ID, first[0].ID)
		}
	}
}

// listPets keeps pages while the database does not change (package
// dataversion); a change committed by another connection, here one opened
// apart from the app as another process would, is in the very next page.
func TestListPetsSeesChangesFromElsewhere(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	rex := s.CreatePet(t, key, map[string]any{"name": "Rex", "categoryId": 1})
	names := func() string {
		t.Helper()
		r := s.Do(t, http.MethodGet, "/v1/pets", key, nil)
		var pets []pets.Pet
		r.JSON(t, &pets)
		var got []string
		for _, p := range pets {
			got = append(got, p.Name)
		}
		return strings.Join(got, ",")
	}
	if got := names(); got != "Rex" {
		t.Fatalf("pets %q, want Rex", got)
	}
	names() // served from the kept page

	other, err := sql.Open("sqlite", filepath.Join(s.Dir, "data.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, change := range []struct{ sql, want string }{
		{fmt.Sprintf("UPDATE pets SET name = 'Tom' WHERE id = '%d'", rex.ID), "Tom"},
		{"INSERT INTO pets (id, name, categoryId, status) VALUES ('999999999999999', 'Zed', 1, 'sold')", "Tom,Zed"},
		{fmt.Sprintf("DELETE FROM pets WHERE id = '%d'", rex.ID), "Zed"},
	} {
		if _, err := other.Exec(change.sql); err != nil {
			t.Fatal(err)
		}
		if got := names(); got != change.want {
			t.Errorf("after %s: pets %q, want %q", change.sql, got, change.want)
		}
	}
}

// A page with pets after it is kept while pets are created after every
// other, and each page still shows what was committed before it was asked
// for: a create after the last pet (on the last page, which gains its next
// link), a pet saved in the dashboard with an id below the others, a rename.
func TestListPetsPagesSeeEveryCreate(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	create := func(name string) {
		t.Helper()
		s.CreatePet(t, key, map[string]any{"name": name, "categoryId": 1})
	}
	// walk is every page's names, from the first, and whether each had a
	// next link.
	walk := func() string {
		t.Helper()
		var pages []string
		for path := "/v1/pets?limit=2"; path != ""; {
			r := s.Do(t, http.MethodGet, path, key, nil)
			var list []pets.Pet
			r.JSON(t, &list)
			var names []string
			for _, p := range list {
				names = append(names, p.Name)
			}
			path = nextLink(t, r.Header.Get("Link"))
			if path != "" {
				names = append(names, "→")
			}
			pages = append(pages, strings.Join(names, ","))
		}
		return strings.Join(pages, " | ")
	}
	for _, name := range []string{"Ann", "Bea", "Cid"} {
		create(name)
	}
	for _, step := range []struct {
		change func()
		want   string
	}{
		{func() {}, "Ann,Bea,→ | Cid"},
		{func() { create("Dee") }, "Ann,Bea,→ | Cid,Dee"},
		{func() { create("Eve") }, "Ann,Bea,→ | Cid,Dee,→ | Eve"},
		{func() {
			collection, err := s.App.FindCollectionByNameOrId("pets")
			if err != nil {
				t.Fatal(err)
			}
			record := core.NewRecord(collection)
			record.Id = "100000000000001" // below every id the clock gives
			record.Set("name", "Abe")
			record.Set("categoryId", 1)
			if err := s.App.Save(record); err != nil {
				t.Fatal(err)
			}
		}, "Abe,Ann,→ | Bea,Cid,→ | Dee,Eve"},
		{func() {
			record, err := s.App.FindFirstRecordByData("pets", "name", "Bea")
			if err != nil {
				t.Fatal(err)
			}
			record.Set("name", "Bob")
			if err := s.App.Save(record); err != nil {
				t.Fatal(err)
			}
		}, "Abe,Ann,→ | Bob,Cid,→ | Dee,Eve"},
	} {
		step.change()
		if got := walk(); got != step.want {
			t.Errorf("pages %q, want %q", got, step.want)
		}
		if got := walk(); got != step.want { // from the kept pages
			t.Errorf("again, pages %q, want %q", got, step.want)
		}
	}
}
