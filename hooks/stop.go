package hooks

import (
	"log/slog"
	"slices"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"
)

// stopStep is one step of the process's stop: an OnTerminate handler,
// which PocketBase runs by priority, lowest first.
type stopStep struct {
	name     string // in the log: msg=Stopping step=NAME
	id       string // the handler's id
	priority int
	// pocketBase steps are PocketBase's own, bound by it at its priority
	// (apis/serve.go, core/base.go, core/notify_watcher.go); they are
	// listed to place ours among them, and log nothing of ours.
	pocketBase bool
}

// Ids of the steps bound here.
const (
	handoverStepId = "petstoreClusterHandover" // bound by clustergate.Bind
	drainStepId    = "petstoreGracefulShutdown"
	partsStepId    = "petstoreStop"
	releaseStepId  = "petstoreReleaseDataDir"
)

// partsStepName is the step of the parts (serviceParts.list), which stop
// one by one in reverse of their start, each logged as a part.
const partsStepName = "parts"

// stopOrder is everything the process stops, in order. On SIGTERM:
//   - a cluster leader hands over first: writes stop at once, the last
//     transactions ship, the lease is resigned;
//   - the drain: /readyz answers 503 for --drain-delay, the listener
//     closes, requests in flight get --shutdown-timeout;
//   - PocketBase's own server shutdown, which finds nothing left to cut
//     off after its 1 second;
//   - the parts, once no request is being served, and before the dashboard's
//     logs are written and the databases close;
//   - PocketBase writes the dashboard's logs and stops watching its
//     settings;
//   - the data directory's use lock is released.
//
// The terminate event's own function then closes the databases (main's
// execute; PocketBase's Restart replaces the process after it). A restart
// runs the same list, but the handover and the drain leave it to
// PocketBase's shutdown, which holds serve open until the process is
// replaced.
var stopOrder = []stopStep{
	{name: "cluster handover", id: handoverStepId, priority: -10002},
	{name: "drain", id: drainStepId, priority: -10001},
	{name: "PocketBase's server", id: "pbGracefulShutdown", priority: -9999, pocketBase: true},
	{name: partsStepName, id: partsStepId, priority: -9000},
	{name: "PocketBase's log writer", id: "__pbAppLoggerOnTerminate__", priority: -999, pocketBase: true},
	{name: "PocketBase's settings watcher", id: "__pbNotifyWatcherSystemHook__", priority: -998, pocketBase: true},
	{name: "data directory's use lock", id: releaseStepId, priority: 0},
}

// stepOf is the step of stopOrder whose handler has id.
func stepOf(id string) stopStep {
	for _, s := range stopOrder {
		if s.id == id {
			return s
		}
	}
	panic("hooks: no stop step " + id)
}

// bindStop binds fn as the step of id, at its place in stopOrder, logging
// the step (at debug) before it runs.
func bindStop(app core.App, id string, log *slog.Logger, fn func(*core.TerminateEvent) error) {
	step := stepOf(id)
	app.OnTerminate().Bind(&hook.Handler[*core.TerminateEvent]{
		Id:       step.id,
		Priority: step.priority,
		Func: func(e *core.TerminateEvent) error {
			log.Debug("Stopping", "step", step.name, "restart", e.IsRestart)
			return fn(e)
		},
	})
}

// StopOrder names what the process stops, in order: the steps of the
// stop, each followed, for the parts' step, by the parts in the order they
// stop. The debug log says "Stopping" with each step= or part= as it comes
// to it, except for the steps bound elsewhere: PocketBase's, and the
// cluster handover (internal/cluster).
func StopOrder() []string {
	parts := (&serviceParts{}).list()
	var names []string
	for _, s := range stopOrder {
		names = append(names, s.name)
		if s.name == partsStepName {
			for _, p := range slices.Backward(parts) {
				names = append(names, p.name)
			}
		}
	}
	return names
}
