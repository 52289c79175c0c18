package goclient_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"

	"petstore/client"
)

// recorder keeps the Request-Id of every answer that passes through it.
type recorder struct {
	next http.RoundTripper
	ids  []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err == nil {
		r.ids = append(r.ids, resp.Header.Get("Request-Id"))
	}
	return resp, err
}

// Against the real binary (TestMain's): every call gives its caller the
// Request-Id of the answer it used, a success with its value (a walk's
// pages through ReportAnswer), a refusal in Error.RequestID and at the end of its
// message, each the id the service put on that very answer.
func TestRequestIDsReachTheCaller(t *testing.T) {
	rec := &recorder{next: http.DefaultTransport}
	c, err := client.New(os.Getenv("PETSTORE_URL"), os.Getenv("PETSTORE_KEY"), client.Options{HTTPClient: &http.Client{Transport: rec}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	last := func() string { return rec.ids[len(rec.ids)-1] }
	named := map[string]bool{}
	check := func(what, id string) {
		t.Helper()
		if len(id) != 32 || id != last() {
			t.Errorf("%s: reported request id %q, the answer's was %q", what, id, last())
		}
		if named[id] {
			t.Errorf("%s: request id %q named an earlier answer too", what, id)
		}
		named[id] = true
	}

	pet, err := c.CreatePet(ctx, client.NewPet{Name: "Named", CategoryID: 2})
	if err != nil {
		t.Fatal(err)
	}
	check("CreatePet", pet.Answer.RequestID)
	got, err := c.GetPet(ctx, pet.ID)
	if err != nil {
		t.Fatal(err)
	}
	check("GetPet", got.Answer.RequestID)
	usage, err := c.GetUsage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check("GetUsage", usage.Answer.RequestID)
	page, err := c.ListPage(ctx, client.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	check("ListPage", page.Answer.RequestID)
	pages := 0
	var a client.Answer
	for _, err := range c.ListPets(ctx, client.ListOptions{Limit: 2}, client.ReportAnswer(&a)) {
		if err != nil {
			t.Fatal(err)
		}
		if !named[a.RequestID] {
			pages++
			check("ListPets' page", a.RequestID)
		}
	}
	if pages < 2 {
		t.Errorf("ListPets reported %d pages' request ids, want one a page (at least 2)", pages)
	}
	for _, err := range c.ListCategories(ctx, client.ReportAnswer(&a)) {
		if err != nil {
			t.Fatal(err)
		}
	}
	check("ListCategories", a.RequestID)

	_, err = c.GetPet(ctx, 100000000000000, client.ReportAnswer(&a))
	var e *client.Error
	if !errors.As(err, &e) || e.Code != client.CodeNotFound {
		t.Fatalf("an unknown pet: %v", err)
	}
	check("a refusal", e.RequestID)
	if a.RequestID != e.RequestID {
		t.Errorf("ReportAnswer stored %q on a refusal, Error.RequestID is %q", a.RequestID, e.RequestID)
	}
	if !strings.HasSuffix(e.Error(), " (request "+e.RequestID+")") {
		t.Errorf("the error's message does not name its request: %q", e.Error())
	}
}
