package webhooks_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"petstore/internal/audit"
	"petstore/internal/webhooks"
	"petstore/testkit/apptest"
)

// The webhooks' collections take no write through the records API (the
// dashboard's), superusers included: an endpoint changes through the staff
// API alone, which audits it, and the outbox and the delivery history are
// the service's. Nor are the collections changed, emptied or deleted there.
// The service's own writes go on: an endpoint's deletion takes its events
// and attempts with it.
func TestWebhookCollectionsRefuseRecordsAPIWrites(t *testing.T) {
	s := apptest.StartWith(t, apptest.Config{WebhooksAllowPrivate: true})
	superuser := s.StaffToken(t)
	receiver := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer receiver.Close()
	r := s.Do(t, http.MethodPost, "/api/petstore/webhooks", superuser, map[string]any{"url": receiver.URL, "events": []string{"pet.created"}})
	var endpoint struct{ ID string }
	if r.StatusCode != http.StatusCreated || json.Unmarshal(r.Body, &endpoint) != nil {
		t.Fatalf("add endpoint: %d %s", r.StatusCode, r.Body)
	}
	if r := s.Do(t, http.MethodPost, "/api/petstore/webhooks/"+endpoint.ID+"/test", superuser, nil); r.StatusCode != http.StatusAccepted {
		t.Fatalf("test event: %d %s", r.StatusCode, r.Body)
	}
	for deadline := time.Now().Add(10 * time.Second); s.CountRecords(t, webhooks.AttemptsCollection) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no attempt")
		}
	}
	idOf := func(collection string) string {
		var row struct{ ID string }
		if err := s.App.DB().NewQuery("SELECT id FROM " + collection + " LIMIT 1").One(&row); err != nil {
			t.Fatal(err)
		}
		return row.ID
	}
	event, attempt := idOf(webhooks.EventsCollection), idOf(webhooks.AttemptsCollection)

	for _, c := range []struct {
		name, id  string
		newRecord map[string]any
	}{
		{webhooks.EndpointsCollection, endpoint.ID, map[string]any{"url": "http://10.0.0.1/", "secret": "whsec_x"}},
		{webhooks.EventsCollection, event, map[string]any{"webhook_id": "msg_x", "endpoint": endpoint.ID, "type": "pet.created", "body": "{}", "status": "pending"}},
		{webhooks.AttemptsCollection, attempt, map[string]any{"event": event, "endpoint": endpoint.ID, "status": 200}},
	} {
		records := "/api/collections/" + c.name + "/records"
		before := s.CountRecords(t, c.name)
		for _, r := range []*apptest.Response{
			s.Do(t, http.MethodPost, records, superuser, c.newRecord),
			s.Do(t, http.MethodPatch, records+"/"+c.id, superuser, map[string]any{"status": "failed", "url": "http://10.0.0.2/"}),
			s.Do(t, http.MethodDelete, records+"/"+c.id, superuser, nil),
			s.Do(t, http.MethodPost, "/api/batch", superuser, map[string]any{"requests": []map[string]any{
				{"method": http.MethodDelete, "url": records + "/" + c.id}}}),
			s.Do(t, http.MethodDelete, "/api/collections/"+c.name+"/truncate", superuser, nil),
			s.Do(t, http.MethodPatch, "/api/collections/"+c.name, superuser, map[string]any{"listRule": "", "name": c.name + "_old"}),
			s.Do(t, http.MethodDelete, "/api/collections/"+c.name, superuser, nil),
		} {
			if r.StatusCode < 400 {
				t.Errorf("%s %s by a superuser: %d %s, want refused", r.Request.Method, r.Request.URL.Path, r.StatusCode, r.Body)
			}
		}
		if n := s.CountRecords(t, c.name); n != before {
			t.Errorf("%s: %d records after the refusals, want %d", c.name, n, before)
		}
		if collection, err := s.App.FindCollectionByNameOrId(c.name); err != nil || collection.ListRule != nil {
			t.Errorf("%s after the refusals: %v, %v", c.name, collection, err)
		}
		if r := s.Do(t, http.MethodGet, records+"/"+c.id, superuser, nil); r.StatusCode != http.StatusOK {
			t.Errorf("a superuser's read of %s: %d %s", c.name, r.StatusCode, r.Body)
		}
	}
	// By the collection's id too.
	events, err := s.App.FindCollectionByNameOrId(webhooks.EventsCollection)
	if err != nil {
		t.Fatal(err)
	}
	if r := s.Do(t, http.MethodDelete, "/api/collections/"+events.Id+"/truncate", superuser, nil); r.StatusCode != http.StatusForbidden {
		t.Errorf("truncate by id: %d %s, want 403", r.StatusCode, r.Body)
	}
	if r := s.Do(t, http.MethodDelete, "/api/petstore/webhooks/"+endpoint.ID, superuser, nil); r.StatusCode != http.StatusNoContent {
		t.Fatalf("the staff API's delete: %d %s", r.StatusCode, r.Body)
	}
	for _, c := range []string{webhooks.EndpointsCollection, webhooks.EventsCollection, webhooks.AttemptsCollection} {
		if n := s.CountRecords(t, c); n != 0 {
			t.Errorf("%s: %d records after the endpoint's deletion", c, n)
		}
	}
	if n, err := s.App.CountRecords(audit.Collection); err != nil || n != 3 {
		t.Errorf("%d audit records (%v), want webhook.created, webhook.test_sent and webhook.deleted", n, err)
	}
}
