package goclient_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"petstore/client"
	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/internal/categories"
	"petstore/testkit/apptest"
)

// ListCategories walks every category in ID order across pages (130: two
// pages of 100), stops paging when the loop breaks, and ends with the
// *Error of a key without pets:read.
func TestListCategories(t *testing.T) {
	s := apptest.Start(t, "")
	for i := 130; i >= 1; i-- {
		if _, err := categories.Create(s.App, int64(i*2), fmt.Sprintf("category %d", i), "", audit.CLI); err != nil {
			t.Fatal(err)
		}
	}
	key := s.NewKey(t, apikeys.NewKey{Plan: "business", Scopes: []apikeys.Scope{apikeys.ScopePetsRead}})
	c := newClient(t, s, s.URL+"/v1", key, client.Options{})
	ctx := context.Background()

	var listed []client.Category
	for category, err := range c.ListCategories(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, category)
	}
	if len(listed) != 130 {
		t.Fatalf("listed %d categories, want 130", len(listed))
	}
	for i, category := range listed {
		if want := (client.Category{ID: int64(2 * (i + 1)), Name: fmt.Sprintf("category %d", i+1)}); category != want {
			t.Fatalf("category %d is %+v, want %+v", i, category, want)
		}
	}
	for range c.ListCategories(ctx) {
		break
	}

	writer := newClient(t, s, s.URL+"/v1", s.NewKey(t, apikeys.NewKey{Scopes: []apikeys.Scope{apikeys.ScopePetsWrite}}), client.Options{})
	var apiErr *client.Error
	for _, err := range writer.ListCategories(ctx) {
		if !errors.As(err, &apiErr) || apiErr.Code != client.CodeInsufficientScope {
			t.Errorf("a key without pets:read: %v, want an *Error with %s", err, client.CodeInsufficientScope)
		}
	}
	if apiErr == nil {
		t.Error("a key without pets:read listed categories")
	}
}
