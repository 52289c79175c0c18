package requestlog

import (
	"log/slog"
	"regexp"
	"testing"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"
)

// Ids have PocketBase's shape and ascend in text order, across seconds,
// within a second beyond idsPerSecond, and when the clock steps back.
func TestIDsAscend(t *testing.T) {
	shape := regexp.MustCompile(`^[a-z0-9]{15}$`)
	ids := newLogIDs()
	start := time.Date(2026, 11, 22, 17, 0, 0, 0, time.UTC)
	times := []time.Time{start, start, start.Add(time.Second), start.Add(-time.Hour), start.Add(2 * time.Second)}
	for range idsPerSecond + 10 {
		times = append(times, start.Add(3*time.Second))
	}
	times = append(times, time.Date(4400, 1, 1, 0, 0, 0, 0, time.UTC))
	last := ""
	for i, now := range times {
		id := ids.next(now)
		if !shape.MatchString(id) {
			t.Fatalf("id %d at %v: %q is not PocketBase's shape", i, now, id)
		}
		if id <= last {
			t.Fatalf("id %d at %v: %q after %q", i, now, id, last)
		}
		last = id
	}
}

// A writer whose ids clash with rows already in the log (another writer with
// the same tag) writes its batch under a new tag: nothing is lost.
func TestIDClashIsWrittenUnderANewTag(t *testing.T) {
	app := newTestApp(t)
	l := startLogger(t, app, All)

	l.ids.tag = "aaaa"
	l.ids.last = uint64(time.Now().Add(time.Hour).Unix()) * idsPerSecond // the next ids do not depend on the clock
	other := *l.ids
	for range 3 {
		if _, err := app.AuxDB().Insert(core.LogsTableName, dbx.Params{"id": other.next(time.Now()), "message": "the other writer's"}).Execute(); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		l.enqueue(entry{level: slog.LevelInfo, message: "GET /clash", data: map[string]any{"type": "request"}, created: time.Now()})
	}
	l.Stop()

	var ids []string
	if err := app.AuxDB().Select("id").From(core.LogsTableName).Where(dbx.HashExp{"message": "GET /clash"}).Column(&ids); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 3 {
		t.Fatalf("%d of 3 entries written: %v", len(ids), ids)
	}
	for _, id := range ids {
		if id[len(id)-idTagLength:] == "aaaa" {
			t.Errorf("entry written with the clashing tag: %s", id)
		}
	}
}
