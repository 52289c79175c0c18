package goclient_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"petstore/client"
	"petstore/internal/apikeys"
	"petstore/testkit/apptest"
)

// GetUsage reads the caller's own use: the requests answered before it,
// by outcome, and its windows after it.
func TestGetUsage(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 50, PerDay: 500})
	c := newClient(t, s, s.URL+"/v1", key, client.Options{})
	ctx := context.Background()
	for range 3 {
		if _, err := c.ListPage(ctx, client.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.GetPet(ctx, 999999); err == nil { // a refusal to count
		t.Fatal("getPet of no pet succeeded")
	}
	u, err := c.GetUsage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	today := time.Now().UTC().Format(time.DateOnly)
	want := client.UsageCounts{Requests: 4, Served: 3, Refused: 1}
	if u.Plan != "free" || u.Today.Day != today || u.Today.UsageCounts != want || u.Month.UsageCounts != want ||
		len(u.Days) != 30 || u.Days[29] != u.Today {
		t.Errorf("usage %+v, want %+v today", u, want)
	}
	if u.Limits.PerDay.Limit != 500 || u.Limits.PerDay.Remaining != 495 || u.Limits.PerMinute.Remaining != 45 {
		t.Errorf("limits %+v, want 5 of 50 and of 500 used", u.Limits)
	}

	writer := newClient(t, s, s.URL+"/v1", s.NewKey(t, apikeys.NewKey{Scopes: []apikeys.Scope{apikeys.ScopePetsWrite}}), client.Options{})
	var apiErr *client.Error
	if _, err := writer.GetUsage(ctx); !errors.As(err, &apiErr) || apiErr.Code != client.CodeInsufficientScope {
		t.Errorf("a key without pets:read: %v, want an *Error with %s", err, client.CodeInsufficientScope)
	}
}
