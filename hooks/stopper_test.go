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

// The stops serve binds run in reverse order of binding (a part stops before
// those it was built on), each once however often the app terminates: a
// restart after a backup restore terminates it, and so may the command's end
// after it. A failing stop is logged and does not keep the others from
// running.
func TestStopsRunInReverseOnce(t *testing.T) {
	app := core.NewBaseApp(core.BaseAppConfig{DataDir: t.TempDir()})
	if err := app.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	stops := &stopper{app: app, log: slog.New(slog.NewTextHandler(&logged, nil))}
	var ran []string
	for _, name := range []string{"usage", "limiter", "writer", "requestlog"} {
		stops.onTerminate("petstoreTest"+name, "Could not stop "+name, func() error {
			ran = append(ran, name)
			if name == "limiter" {
				return errors.New("boom")
			}
			return nil
		})
	}

	for _, restart := range []bool{true, false, false} {
		err := app.OnTerminate().Trigger(&core.TerminateEvent{App: app, IsRestart: restart}, func(e *core.TerminateEvent) error {
			return nil
		})
		if err != nil {
			t.Fatalf("terminate (restart %v): %v", restart, err)
		}
	}
	if want := []string{"requestlog", "writer", "limiter", "usage"}; !slices.Equal(ran, want) {
		t.Errorf("stops ran %q, want %q once each", ran, want)
	}
	if n := strings.Count(logged.String(), "Could not stop limiter"); n != 1 || !strings.Contains(logged.String(), "boom") {
		t.Errorf("the failing stop logged %d times:\n%s", n, logged.String())
	}
}
