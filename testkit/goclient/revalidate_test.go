package goclient_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"petstore/client"
	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/internal/categories"
	"petstore/testkit/apptest"
)

// The client keeps each address's latest 200 with its ETag and revalidates
// it: a second call is a 304 whose kept body the call returns, with the
// 304's rate-limit state; a commit makes the next call a 200 with what
// changed. Each call's own attempts send If-None-Match, as the service sees
// them (OnAttempt's statuses).
func TestClientRevalidates(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	c := newClient(t, s, s.URL+"/v1", key, client.Options{})
	ctx := context.Background()
	createPets(t, c, 3)

	first, err := c.ListPage(ctx, client.ListOptions{Limit: 2})
	if err != nil || first.Answer.StatusCode != http.StatusOK || first.Answer.Header.Get("ETag") == "" {
		t.Fatalf("first page: %v, status %d, ETag %q; want 200 with an ETag", err, first.Answer.StatusCode, first.Answer.Header.Get("ETag"))
	}
	again, err := c.ListPage(ctx, client.ListOptions{Limit: 2})
	if err != nil || again.Answer.StatusCode != http.StatusNotModified || !slices.Equal(again.Pets, first.Pets) || again.Next != first.Next {
		t.Fatalf("the page again: %v, status %d, %+v next %q; want 304 with %+v next %q", err, again.Answer.StatusCode, again.Pets, again.Next, first.Pets, first.Next)
	}
	if a, f := again.Answer, first.Answer; a.RateLimit.Remaining >= f.RateLimit.Remaining || a.RequestID == f.RequestID {
		t.Errorf("the 304's rate limit (remaining %d) and request id %s are not its own (the 200's: %d, %s)",
			a.RateLimit.Remaining, a.RequestID, f.RateLimit.Remaining, f.RequestID)
	}

	// A walk revalidates its pages; the last one changes with a new pet.
	walk := func() (statuses []int, names []string) {
		var last client.Answer
		for pet, err := range c.ListPets(ctx, client.ListOptions{Limit: 2}, client.ReportAnswer(&last)) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, pet.Name)
		}
		return append(statuses, last.StatusCode), names
	}
	if statuses, names := walk(); statuses[0] != http.StatusOK || len(names) != 3 {
		t.Fatalf("a first walk: last page %v, pets %q; want 200 (not read yet) and 3 pets", statuses, names)
	}
	if statuses, names := walk(); statuses[0] != http.StatusNotModified || len(names) != 3 {
		t.Fatalf("a walk again: last page %v, pets %q; want 304 and 3 pets", statuses, names)
	}
	if _, err := c.CreatePet(ctx, client.NewPet{Name: "Max", CategoryID: 1}); err != nil {
		t.Fatal(err)
	}
	if statuses, names := walk(); statuses[0] != http.StatusOK || len(names) != 4 || names[3] != "Max" {
		t.Fatalf("a walk after a create: last page %v, pets %q; want 200 and the new pet", statuses, names)
	}

	got, err := c.GetPet(ctx, first.Pets[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := c.GetPet(ctx, first.Pets[0].ID)
	if err != nil || kept.Answer.StatusCode != http.StatusNotModified || kept.Pet != got.Pet {
		t.Fatalf("getPet again: %v, status %d, %+v; want 304 with %+v", err, kept.Answer.StatusCode, kept.Pet, got.Pet)
	}

	var a client.Answer

	if _, err := categories.Create(s.App, 1, "Dogs", "", audit.CLI); err != nil {
		t.Fatal(err)
	}
	list := func() (int, []client.Category) {
		var all []client.Category
		for category, err := range c.ListCategories(ctx, client.ReportAnswer(&a)) {
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, category)
		}
		return a.StatusCode, all
	}
	list()
	if status, all := list(); status != http.StatusNotModified || len(all) != 1 || all[0].Name != "Dogs" {
		t.Fatalf("categories again: %d %+v; want 304 with Dogs", status, all)
	}
	if _, err := categories.Rename(s.App, 1, "Hounds", audit.CLI); err != nil {
		t.Fatal(err)
	}
	if status, all := list(); status != http.StatusOK || len(all) != 1 || all[0].Name != "Hounds" {
		t.Fatalf("categories after a rename: %d %+v; want 200 with Hounds", status, all)
	}
}

// RevalidationEntries bounds what the client keeps, the least recently used
// dropped first; negative keeps nothing, and no call sends If-None-Match.
func TestClientRevalidationBound(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	ctx := context.Background()
	pets := createPets(t, newClient(t, s, s.URL+"/v1", key, client.Options{}), 2)
	var ids []int64
	for id := range pets {
		ids = append(ids, id)
	}
	status := func(c *client.Client, id int64) int {
		got, err := c.GetPet(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return got.Answer.StatusCode
	}

	one := newClient(t, s, s.URL+"/v1", key, client.Options{RevalidationEntries: 1})
	got := []int{status(one, ids[0]), status(one, ids[1]), status(one, ids[0]), status(one, ids[0])}
	if want := []int{200, 200, 200, 304}; !slices.Equal(got, want) {
		t.Errorf("one answer kept, pets a, b, a, a: %v, want %v", got, want)
	}
	none := newClient(t, s, s.URL+"/v1", key, client.Options{RevalidationEntries: -1})
	if got := []int{status(none, ids[0]), status(none, ids[0])}; !slices.Equal(got, []int{200, 200}) {
		t.Errorf("nothing kept, one pet twice: %v, want 200 twice", got)
	}
}
