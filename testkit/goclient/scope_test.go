package goclient_test

import (
	"context"
	"errors"
	"testing"

	"petstore/client"
	"petstore/internal/apikeys"
	"petstore/testkit/apptest"
)

// A call the API key's scopes do not allow fails at once (no retry) with an
// *Error of CodeInsufficientScope naming the scope it needs, with the
// answer's rate-limit state; the calls the key may make work.
func TestInsufficientScope(t *testing.T) {
	s := apptest.Start(t, "")
	ctx := context.Background()
	readOnly := newClient(t, s, s.URL+"/v1", s.NewKey(t, apikeys.NewKey{Scopes: []apikeys.Scope{apikeys.ScopePetsRead}}), client.Options{})
	writeOnly := newClient(t, s, s.URL+"/v1", s.NewKey(t, apikeys.NewKey{Scopes: []apikeys.Scope{apikeys.ScopePetsWrite}}), client.Options{})

	pet, err := writeOnly.CreatePet(ctx, client.NewPet{Name: "Rex", CategoryID: 1})
	if err != nil {
		t.Fatal(err)
	}
	if page, err := readOnly.ListPage(ctx, client.ListOptions{}); err != nil || len(page.Pets) != 1 {
		t.Fatalf("a read-only key lists: %v, %v", page, err)
	}

	for _, c := range []struct {
		name  string
		call  func() error
		scope string
	}{
		{"a read-only key creates", func() error {
			_, err := readOnly.CreatePet(ctx, client.NewPet{Name: "Tom", CategoryID: 1})
			return err
		}, "pets:write"},
		{"a write-only key lists", func() error { _, err := writeOnly.ListPage(ctx, client.ListOptions{}); return err }, "pets:read"},
		{"a write-only key gets", func() error { _, err := writeOnly.GetPet(ctx, pet.ID); return err }, "pets:read"},
	} {
		err := c.call()
		var e *client.Error
		if !errors.As(err, &e) || e.StatusCode != 403 || e.Code != client.CodeInsufficientScope || e.Scope != c.scope ||
			e.RetryAfter != 0 || e.RateLimit.Limit == 0 {
			t.Errorf("%s: %#v, want a 403 insufficient_scope naming %s, with the rate limit", c.name, err, c.scope)
		}
	}
	if n := s.CountRecords(t, "pets"); n != 1 {
		t.Errorf("%d pets stored, want the one the write-only key made", n)
	}
}
