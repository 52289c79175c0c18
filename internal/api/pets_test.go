package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"petstore/internal/apikeys"
	"petstore/internal/pets"
	"petstore/testkit/apptest"
)

func TestCreateThenGetAndList(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})

	p := s.CreatePet(t, key, map[string]any{"name": "  Rex  ", "categoryId": 7})
	if p.Name != "Rex" || p.CategoryID != 7 || p.Status != "available" {
		t.Fatalf("created %+v, want name trimmed and status defaulted to available", p)
	}
	if p.ID < 100000000000000 || p.ID > 1<<53-1 {
		t.Fatalf("id %d is not a 15-digit JSON-safe integer", p.ID)
	}
	sold := s.CreatePet(t, key, map[string]any{"name": "Tom", "categoryId": 9007199254740991, "status": "sold"})

	r := s.Do(t, http.MethodGet, fmt.Sprintf("/v1/pets/%d", p.ID), key, nil)
	var got pets.Pet
	r.JSON(t, &got)
	if r.StatusCode != http.StatusOK || got != p {
		t.Fatalf("get: %d %+v, want %+v", r.StatusCode, got, p)
	}
	if !strings.Contains(string(r.Body), `"id":`+fmt.Sprint(p.ID)) {
		t.Fatalf("id is not a JSON number: %s", r.Body)
	}

	r = s.Do(t, http.MethodGet, "/v1/pets?status=sold", key, nil)
	var list []pets.Pet
	r.JSON(t, &list)
	if r.StatusCode != http.StatusOK || len(list) != 1 || list[0] != sold {
		t.Fatalf("list sold: %d %s", r.StatusCode, r.Body)
	}
	r = s.Do(t, http.MethodGet, "/v1/pets?status=pending", key, nil)
	if string(r.Body) != "[]\n" {
		t.Fatalf("empty list body %q, want []", r.Body)
	}
}

// Walking the pages visits every pet that existed at the start exactly once,
// while other clients keep adding pets.
func TestPaginationUnderConcurrentInserts(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business", PerMinute: 100000, PerDay: 1000000})

	before := map[int64]bool{}
	for i := range 45 {
		before[s.CreatePet(t, key, map[string]any{"name": fmt.Sprint("pet", i), "categoryId": 1}).ID] = true
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				r := s.Do(t, http.MethodPost, "/v1/pets", key, map[string]any{"name": fmt.Sprint("new", w, "-", i), "categoryId": 2})
				if r.StatusCode != http.StatusCreated {
					t.Errorf("concurrent create: %d %s", r.StatusCode, r.Body)
					return
				}
			}
		}()
	}

	seen := map[int64]int{}
	path, pages := "/v1/pets?limit=7", 0
	var lastID int64
	for path != "" {
		r := s.Do(t, http.MethodGet, path, key, nil)
		if r.StatusCode != http.StatusOK {
			t.Fatalf("page %s: %d %s", path, r.StatusCode, r.Body)
		}
		var page []pets.Pet
		r.JSON(t, &page)
		if len(page) > 7 {
			t.Fatalf("page of %d, limit 7", len(page))
		}
		for _, p := range page {
			if p.ID <= lastID {
				t.Fatalf("ids not ascending: %d after %d", p.ID, lastID)
			}
			lastID = p.ID
			seen[p.ID]++
		}
		path = nextLink(t, r.Header.Get("Link"))
		if pages++; pages > 1000 {
			t.Fatal("pagination does not end")
		}
	}
	close(stop)
	wg.Wait()

	for id := range before {
		if seen[id] != 1 {
			t.Errorf("pet %d seen %d times, want 1", id, seen[id])
		}
	}
}

// nextLink returns the target of rel="next" in a Link header, or "".
func nextLink(t *testing.T, link string) string {
	t.Helper()
	if link == "" {
		return ""
	}
	target, params, ok := strings.Cut(link, ";")
	if !ok || strings.TrimSpace(params) != `rel="next"` || !strings.HasPrefix(target, "</v1/pets?") {
		t.Fatalf("Link %q is not one rel=next link to /v1/pets", link)
	}
	return strings.Trim(target, "<>")
}

func TestPaginationLastPageHasNoNext(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{})
	for i := range 4 {
		s.CreatePet(t, key, map[string]any{"name": fmt.Sprint(i), "categoryId": 1, "status": "pending"})
	}
	s.CreatePet(t, key, map[string]any{"name": "other", "categoryId": 1})

	r := s.Do(t, http.MethodGet, "/v1/pets?limit=2&status=pending", key, nil)
	next := nextLink(t, r.Header.Get("Link"))
	if !strings.Contains(next, "status=pending") || !strings.Contains(next, "limit=2") {
		t.Fatalf("next link %q drops the query", next)
	}
	r = s.Do(t, http.MethodGet, next, key, nil)
	var page []pets.Pet
	r.JSON(t, &page)
	if len(page) != 2 || r.Header.Get("Link") != "" {
		t.Fatalf("last page: %d pets, Link %q; want 2 and none", len(page), r.Header.Get("Link"))
	}
	r = s.Do(t, http.MethodGet, "/v1/pets", key, nil)
	r.JSON(t, &page)
	if len(page) != 5 || r.Header.Get("Link") != "" {
		t.Fatalf("default page: %d pets, Link %q", len(page), r.Header.Get("Link"))
	}
}
