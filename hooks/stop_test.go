package hooks

import (
	"slices"
	"testing"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"

	"petstore/internal/datadir"
	"petstore/internal/options"
)

// The stop runs in the order of its list: the priorities rise along it,
// and every step is an OnTerminate handler of the app by the id the list
// gives it, PocketBase's own included; terminating runs them in the list's
// order.
func TestStopOrderIsTheList(t *testing.T) {
	for i := 1; i < len(stopOrder); i++ {
		if prev, s := stopOrder[i-1], stopOrder[i]; s.priority <= prev.priority {
			t.Errorf("%s (%d) is listed after %s (%d) but runs before it", s.name, s.priority, prev.name, prev.priority)
		}
	}

	app := core.NewBaseApp(core.BaseAppConfig{DataDir: t.TempDir()})
	Register(app, options.Options{Startup: &datadir.StartupConfig{LockTimeout: datadir.DefaultLockTimeout}})
	if err := app.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.ResetBootstrapState() })
	// Bound when a cluster leader serves, and when PocketBase serves.
	later := []string{handoverStepId, "pbGracefulShutdown"}
	var ran []string
	terminate := app.OnTerminate()
	for _, s := range stopOrder {
		n := terminate.Length()
		// A handler of the same id replaces the step's: the count stays.
		terminate.Bind(&hook.Handler[*core.TerminateEvent]{Id: s.id, Priority: s.priority, Func: func(e *core.TerminateEvent) error {
			ran = append(ran, s.name)
			return e.Next()
		}})
		if bound := terminate.Length() == n; bound == slices.Contains(later, s.id) {
			t.Errorf("%s: bound %v once the app is bootstrapped, by the id %s", s.name, bound, s.id)
		}
	}
	if err := terminate.Trigger(&core.TerminateEvent{App: app}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range stopOrder {
		want = append(want, s.name)
	}
	if !slices.Equal(ran, want) {
		t.Errorf("the steps ran in the order %q,\nwant %q", ran, want)
	}
}
