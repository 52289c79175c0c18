package requestlog

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tests"

	"petstore/internal/database"
)

// newTestApp is a PocketBase test app, cleaned up when tb ends.
func newTestApp(tb testing.TB) *tests.TestApp {
	tb.Helper()
	// The binary's database configuration: the log's writing connection works
	// on a table larger than its page cache.
	app, err := tests.NewTestAppWithConfig(core.BaseAppConfig{DataDir: tb.TempDir(), EncryptionEnv: "pb_test_env",
		DBConnect: database.Connect, DataMaxOpenConns: database.ReadPoolConns, DataMaxIdleConns: database.ReadPoolConns})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(app.Cleanup)
	return app
}

// startLogger starts a Logger on app, stopped when tb ends (before app is
// cleaned up); a test may stop it earlier.
func startLogger(tb testing.TB, app core.App, mode Mode) *Logger {
	tb.Helper()
	l, err := Start(app, Config{Mode: mode})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(l.Stop)
	return l
}

// A log writer that cannot keep up drops entries instead of queueing them
// without bound, and says in the log how many it dropped.
func TestFullQueueDropsAndReports(t *testing.T) {
	app := newTestApp(t)
	l := startLogger(t, app, All)

	// Hold the log database's only write connection: the writer waits.
	tx, err := app.AuxNonconcurrentDB().(*dbx.DB).Begin()
	if err != nil {
		t.Fatal(err)
	}
	sent := QueueSize + batchSize + 100 // the writer holds up to a batch
	for i := range sent {
		l.enqueue(entry{level: slog.LevelInfo, message: "GET /test", data: map[string]any{"type": "request", "i": i}, created: time.Now()})
	}
	if l.Dropped() == 0 {
		t.Fatalf("%d entries queued behind a blocked writer, none dropped", sent)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	l.Stop()

	var written, reported int64
	if err := app.AuxDB().Select("count(*)").From(core.LogsTableName).
		Where(dbx.HashExp{"message": "GET /test"}).Row(&written); err != nil {
		t.Fatal(err)
	}
	if err := app.AuxDB().Select("coalesce(sum(json_extract(data, '$.dropped')), 0)").From(core.LogsTableName).
		Where(dbx.NewExp("json_extract(data, '$.type') = 'requestlog'")).Row(&reported); err != nil {
		t.Fatal(err)
	}
	if written+l.Dropped() != int64(sent) || reported != l.Dropped() {
		t.Fatalf("sent %d: written %d, dropped %d, reported dropped %d", sent, written, l.Dropped(), reported)
	}
}

// A batch waits gatherFor for more entries, not longer: an entry is in the
// log at once, to staff's eyes.
func TestEntryIsWrittenPromptly(t *testing.T) {
	app := newTestApp(t)
	l := startLogger(t, app, All)

	for _, message := range []string{"GET /first", "GET /second"} { // the second after an idle wait
		logged := time.Now()
		l.enqueue(entry{level: slog.LevelInfo, message: message, data: map[string]any{"type": "request"}, created: logged})
		for {
			var n int
			if err := app.AuxDB().Select("count(*)").From(core.LogsTableName).
				Where(dbx.HashExp{"message": message}).Row(&n); err != nil {
				t.Fatal(err)
			}
			if n == 1 {
				break
			}
			if time.Since(logged) > time.Second {
				t.Fatalf("%s not in the log after 1 s (gatherFor %v)", message, gatherFor)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// A batch longer than one INSERT's rows is written whole, each row with its
// own columns, and ids ascending in the order entries were queued.
func TestBatchIsWrittenRowByRow(t *testing.T) {
	app := newTestApp(t)
	l := startLogger(t, app, All)
	start := time.Date(2026, 11, 22, 17, 0, 0, 0, time.UTC)
	batch := make([]entry, 2*rowsPerInsert+3)
	for i := range batch {
		batch[i] = entry{level: slog.Level(i % 9), message: fmt.Sprintf("GET /batch/%d", i),
			data: map[string]any{"i": i}, created: start.Add(time.Duration(i) * time.Millisecond)}
	}
	l.write(batch)
	l.Stop()

	var rows []struct {
		ID      string `db:"id"`
		Level   int    `db:"level"`
		Message string `db:"message"`
		Data    string `db:"data"`
		Created string `db:"created"`
	}
	if err := app.AuxDB().Select("id", "level", "message", "data", "created").From(core.LogsTableName).
		Where(dbx.Like("message", "GET /batch/")).OrderBy("id").All(&rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(batch) {
		t.Fatalf("%d rows of %d", len(rows), len(batch))
	}
	for i, r := range rows {
		want := fmt.Sprintf("%d GET /batch/%d {\"i\":%d} %s", i%9, i, i, start.Add(time.Duration(i)*time.Millisecond).Format("2006-01-02 15:04:05.000Z"))
		if got := fmt.Sprintf("%d %s %s %s", r.Level, r.Message, r.Data, r.Created); got != want {
			t.Errorf("row %d (id %s): %s, want %s", i, r.ID, got, want)
		}
	}
}

// Entries logged after Stop are dropped, not written to a closing database.
func TestStopDropsLaterEntries(t *testing.T) {
	app := newTestApp(t)
	l := startLogger(t, app, Errors)
	l.Stop()
	l.enqueue(entry{message: "late"})
	if l.Dropped() != 1 {
		t.Fatalf("dropped %d after Stop, want 1", l.Dropped())
	}
}

func TestParseMode(t *testing.T) {
	for in, ok := range map[string]bool{"all": true, "errors": true, "": false, "none": false, "ALL": false} {
		if _, err := ParseMode(in); (err == nil) != ok {
			t.Errorf("ParseMode(%q): %v", in, err)
		}
	}
}
