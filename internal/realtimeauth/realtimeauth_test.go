package realtimeauth_test

import (
	"encoding/json"
	"testing"
	"time"

	"petstore/internal/apikeys"
	"petstore/testkit/apptest"
)

// A superuser deleted, or whose password changed, behind this process's back
// (by the CLI, or by another instance on the data directory: a change of the
// database that fires none of this process's hooks) hears no more record
// events: its stream ends before the next one goes out. A superuser still
// signed in keeps hearing them.
func TestRealtimeForgetsASuperuserChangedElsewhere(t *testing.T) {
	for _, change := range []struct{ name, sql string }{
		{"deleted", "DELETE FROM _superusers WHERE email = {:email}"},
		{"password changed", "UPDATE _superusers SET tokenKey = 'changed elsewhere' WHERE email = {:email}"},
	} {
		t.Run(change.name, func(t *testing.T) {
			s := apptest.Start(t, "")
			gone := s.ConnectRealtime(t)
			gone.Subscribe(t, s.SuperuserToken(t, "gone@example.com", "a long enough password"), "api_keys/*")
			kept := s.ConnectRealtime(t)
			kept.Subscribe(t, s.StaffToken(t), "api_keys/*")

			s.NewKey(t, apikeys.NewKey{Name: "before"})
			for _, c := range []*apptest.Realtime{gone, kept} {
				if m := c.NextRecord(t, "api_keys/*"); m.Record["name"] != "before" {
					t.Fatalf("before the change: %+v", m)
				}
			}

			if _, err := s.App.DB().NewQuery(change.sql).Bind(map[string]any{"email": "gone@example.com"}).Execute(); err != nil {
				t.Fatal(err)
			}
			s.NewKey(t, apikeys.NewKey{Name: "after"})
			if m := kept.NextRecord(t, "api_keys/*"); m.Record["name"] != "after" {
				t.Errorf("the superuser still signed in heard %+v", m)
			}
			select {
			case ev, open := <-gone.Events:
				if open {
					var m apptest.RecordMessage
					_ = json.Unmarshal(ev.Data, &m)
					t.Errorf("the superuser %s elsewhere heard %q %+v", change.name, ev.Name, m)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("the stream of the superuser %s elsewhere is still open", change.name)
			}
		})
	}
}
