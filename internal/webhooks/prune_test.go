package webhooks_test

import (
	"context"
	"testing"
	"time"

	"github.com/pocketbase/dbx"

	"petstore/internal/audit"
	"petstore/internal/webhooks"
	"petstore/testkit/apptest"
)

// Prune deletes the attempts older than the retention, and the events
// delivered or failed before it; pending events stay, however old.
func TestPruneKeepsPendingEvents(t *testing.T) {
	s := apptest.StartWith(t, apptest.Config{WebhooksAllowPrivate: true})
	// Paused: the deliverer leaves its events alone, the test sets them.
	id, _, err := webhooks.Create(context.Background(), s.App, webhooks.Targets{AllowPrivate: true},
		webhooks.Input{URL: ptr("http://127.0.0.1:9/hook"), Events: &[]webhooks.Type{webhooks.PetCreated}, Paused: ptr(true)}, audit.CLI)
	if err != nil {
		t.Fatal(err)
	}
	outbox := webhooks.NewOutbox(s.App)
	for range 3 {
		if err := outbox.WriteTo(s.App, id, webhooks.Event{Type: webhooks.PetCreated, Data: map[string]int{"id": 1}}); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-40 * 24 * time.Hour).UTC().Format("2006-01-02 15:04:05.000Z")
	db := s.App.NonconcurrentDB()
	exec := func(sql string, params dbx.Params) {
		t.Helper()
		if _, err := db.NewQuery(sql).Bind(params).Execute(); err != nil {
			t.Fatal(err)
		}
	}
	var ids []struct{ ID string }
	if err := db.NewQuery("SELECT id FROM webhook_events ORDER BY rowid").All(&ids); err != nil || len(ids) != 3 {
		t.Fatalf("events %v %v", ids, err)
	}
	exec("UPDATE webhook_events SET updated = {:old}", dbx.Params{"old": old})
	exec("UPDATE webhook_events SET status = 'delivered' WHERE id = {:id}", dbx.Params{"id": ids[0].ID})
	exec("UPDATE webhook_events SET status = 'failed' WHERE id = {:id}", dbx.Params{"id": ids[1].ID})
	for i, e := range ids {
		created := old
		if i == 2 {
			created = time.Now().UTC().Format("2006-01-02 15:04:05.000Z")
		}
		exec("INSERT INTO webhook_attempts (id, event, endpoint, status, created) VALUES ({:id}, {:event}, {:endpoint}, 500, {:created})",
			dbx.Params{"id": "attempt00000" + string(rune('a'+i)) + "xy", "event": e.ID, "endpoint": id, "created": created})
	}
	if err := webhooks.Prune(s.App, 30*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if n := s.CountRecords(t, webhooks.AttemptsCollection); n != 1 {
		t.Errorf("%d attempts, want the recent one", n)
	}
	var left []struct{ ID string }
	if err := db.NewQuery("SELECT id FROM webhook_events ORDER BY rowid").All(&left); err != nil || len(left) != 1 || left[0].ID != ids[2].ID {
		t.Errorf("events left %v %v, want the pending one", left, err)
	}
}

func ptr[T any](v T) *T { return &v }
