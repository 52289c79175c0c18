package hooks

import (
	"bytes"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/pocketbase/pocketbase/core"
)

// recordedParts are parts that record their starts and stops in ran; the
// part named fails (its start, or its stop when stopFails).
func recordedParts(ran *[]string, names []string, early int, fails string, stopFails bool) []part {
	var parts []part
	for i, name := range names {
		parts = append(parts, part{name: name, early: i < early, start: func() (func() error, error) {
			if name == fails && !stopFails {
				return nil, errors.New("no start")
			}
			*ran = append(*ran, "start "+name)
			return func() error {
				*ran = append(*ran, "stop "+name)
				if name == fails {
					return errors.New("boom")
				}
				return nil
			}, nil
		}})
	}
	return parts
}

func terminate(t *testing.T, app core.App, restart bool) {
	t.Helper()
	err := app.OnTerminate().Trigger(&core.TerminateEvent{App: app, IsRestart: restart}, func(e *core.TerminateEvent) error {
		return nil
	})
	if err != nil {
		t.Fatalf("terminate (restart %v): %v", restart, err)
	}
}

// The parts start in the order of their list, the early ones first when
// asked, and stop in reverse (a part stops before those it was built on),
// each once however often the app terminates: a restart after a backup
// restore terminates it, and so may the command's end after it. A failing
// stop is logged and does not keep the others from running.
func TestPartsStartInOrderAndStopInReverseOnce(t *testing.T) {
	app := core.NewBaseApp(core.BaseAppConfig{DataDir: t.TempDir()})
	var logged bytes.Buffer
	var ran []string
	names := []string{"node", "usage", "limiter", "writer", "requestlog"}
	life := bindLifecycle(app, slog.New(slog.NewTextHandler(&logged, nil)), recordedParts(&ran, names, 1, "limiter", true))

	if err := life.startEarly(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"start node"}; !slices.Equal(ran, want) {
		t.Fatalf("early start ran %q, want %q", ran, want)
	}
	if err := life.startAll(); err != nil {
		t.Fatal(err)
	}
	if err := life.startAll(); err != nil { // started parts do not start again
		t.Fatal(err)
	}
	for _, restart := range []bool{true, false, false} {
		terminate(t, app, restart)
	}
	want := []string{"start node", "start usage", "start limiter", "start writer", "start requestlog",
		"stop requestlog", "stop writer", "stop limiter", "stop usage", "stop node"}
	if !slices.Equal(ran, want) {
		t.Errorf("ran %q,\nwant %q", ran, want)
	}
	if n := strings.Count(logged.String(), "Could not stop the limiter"); n != 1 || !strings.Contains(logged.String(), "boom") {
		t.Errorf("the failing stop logged %d times:\n%s", n, logged.String())
	}
}

// A part that fails to start stops the start there: the parts after it do
// not start, and those before it stop when the app terminates.
func TestFailedStartStopsThoseStarted(t *testing.T) {
	app := core.NewBaseApp(core.BaseAppConfig{DataDir: t.TempDir()})
	var ran []string
	life := bindLifecycle(app, slog.New(slog.DiscardHandler), recordedParts(&ran, []string{"usage", "limiter", "writer"}, 0, "limiter", false))
	if err := life.startAll(); err == nil || err.Error() != "no start" {
		t.Fatalf("start: %v, want the limiter's error", err)
	}
	if err := life.startAll(); err == nil { // the failed part is not skipped
		t.Fatal("a second start went past the failed part")
	}
	terminate(t, app, false)
	if want := []string{"start usage", "stop usage"}; !slices.Equal(ran, want) {
		t.Errorf("ran %q, want %q", ran, want)
	}
}
