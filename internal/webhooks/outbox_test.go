package webhooks_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/internal/webhooks"
	"petstore/testkit/apptest"
)

// Several events written together (a pets transaction's creates) are one
// row per event and endpoint, in order for each endpoint, an event's rows
// sharing its webhook-id. An event whose dedupe text an endpoint has
// already got is left out for that endpoint, the others are written.
func TestOutboxWritesEventsTogetherInOrder(t *testing.T) {
	s := apptest.StartWith(t, apptest.Config{WebhooksAllowPrivate: true})
	var endpoints []string
	for range 2 {
		// Nobody listens there: the events stay pending, their rows as written.
		id, _, err := webhooks.Create(context.Background(), s.App, webhooks.Targets{AllowPrivate: true},
			webhooks.Input{URL: ptr("http://127.0.0.1:9/hook"), Events: &[]webhooks.Type{webhooks.PetCreated}}, audit.CLI)
		if err != nil {
			t.Fatal(err)
		}
		endpoints = append(endpoints, id)
	}
	outbox := webhooks.NewOutbox(s.App)
	event := func(n int, dedupe string) webhooks.Event {
		return webhooks.Event{Type: webhooks.PetCreated, Data: map[string]int{"n": n}, Dedupe: dedupe}
	}
	if err := outbox.Write(s.App, event(0, "taken")); err != nil {
		t.Fatal(err)
	}
	err := s.App.RunInTransaction(func(tx core.App) error {
		return outbox.Write(tx, event(1, ""), event(2, "taken"), event(3, ""), event(4, "once"))
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, endpoint := range endpoints {
		var rows []struct {
			ID        string `db:"id"`
			WebhookID string `db:"webhook_id"`
			Body      string `db:"body"`
		}
		if err := s.App.DB().NewQuery("SELECT id, webhook_id, body FROM webhook_events WHERE endpoint = {:e} ORDER BY rowid").
			Bind(map[string]any{"e": endpoint}).All(&rows); err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, r := range rows {
			var body struct{ Data struct{ N int } }
			if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
				t.Fatal(err)
			}
			got = append(got, body.Data.N)
			if len(r.ID) != 15 {
				t.Errorf("id %q", r.ID)
			}
		}
		if len(got) != 4 || got[0] != 0 || got[1] != 1 || got[2] != 3 || got[3] != 4 {
			t.Errorf("endpoint %s got events %v, want 0, 1, 3, 4", endpoint, got)
		}
	}
	var shared int
	if err := s.App.DB().NewQuery("SELECT COUNT(DISTINCT webhook_id) FROM webhook_events").Row(&shared); err != nil || shared != 4 {
		t.Errorf("%d webhook-ids for 4 events on 2 endpoints (%v)", shared, err)
	}
}

// The subscriptions an instance keeps are those of the data version its
// writes begin at: an endpoint added, paused or resumed through another
// instance on the same data directory counts for this one's very next
// create, not once its deliverer has read the endpoints again (a second
// later).
func TestOutboxFollowsEndpointsChangedElsewhere(t *testing.T) {
	a := apptest.StartWith(t, apptest.Config{WebhooksAllowPrivate: true})
	b := apptest.StartWith(t, apptest.Config{Dir: a.Dir, WebhooksAllowPrivate: true})
	staff := a.StaffToken(t)
	key := a.NewKey(t, apikeys.NewKey{Plan: "enterprise"})
	b.CreatePet(t, key, map[string]any{"name": "Before", "categoryId": 1})

	// Nobody listens there: the events stay in the outbox.
	r := a.Do(t, http.MethodPost, "/api/petstore/webhooks", staff, map[string]any{"url": "http://127.0.0.1:9/hook", "events": []string{"pet.created"}})
	var endpoint struct{ ID string }
	if r.StatusCode != http.StatusCreated || json.Unmarshal(r.Body, &endpoint) != nil {
		t.Fatalf("add endpoint: %d %s", r.StatusCode, r.Body)
	}
	for _, step := range []struct {
		change map[string]any // the endpoint's change through a; nil: none
		events int64          // its events after a create through b
	}{
		{nil, 1},
		{map[string]any{"paused": true}, 1},
		{map[string]any{"paused": false}, 2},
	} {
		if step.change != nil {
			if r := a.Do(t, http.MethodPatch, "/api/petstore/webhooks/"+endpoint.ID, staff, step.change); r.StatusCode != http.StatusOK {
				t.Fatalf("change %v: %d %s", step.change, r.StatusCode, r.Body)
			}
		}
		b.CreatePet(t, key, map[string]any{"name": "After", "categoryId": 1})
		if n := b.CountRecords(t, webhooks.EventsCollection); n != step.events {
			t.Fatalf("after the change %v through the other instance: %d events, want %d", step.change, n, step.events)
		}
	}
}
