package hooks

import (
	"log/slog"
	"slices"
	"sync"

	"github.com/pocketbase/pocketbase/core"
)

// part is one thing the service runs. The parts are one list (see
// serviceParts), started in its order and stopped in reverse.
type part struct {
	// name says what the part is in the logs: "Could not stop the usage
	// history".
	name string
	// early parts start before PocketBase's bootstrap opens the database,
	// when serve starts (a part that decides whether this process may open
	// it at all); they come first in the list. The others start when the
	// server is built, before it listens, and so do the early ones of an
	// app bootstrapped before Register (Options.Startup nil: tests).
	early bool
	// start starts the part, keeping what it made for the parts after it,
	// and returns its stop (nil: nothing to stop).
	start func() (stop func() error, err error)
}

// lifecycle starts a list of parts and stops those it started. Each stop
// runs once, however often the app terminates: a restart after a backup
// restore terminates it, and the command's end may terminate it again.
type lifecycle struct {
	log   *slog.Logger
	parts []part

	mu      sync.Mutex
	started int     // parts[:started] have started
	failed  error   // why parts[started] did not start
	stops   []*stop // in start order
}

type stop struct {
	name string
	fn   func() error
	once sync.Once
}

// bindLifecycle returns the lifecycle of parts, which stop when app
// terminates, at their step of stopOrder.
func bindLifecycle(app core.App, log *slog.Logger, parts []part) *lifecycle {
	l := &lifecycle{log: log, parts: parts}
	bindStop(app, partsStepId, log, func(e *core.TerminateEvent) error {
		l.stop()
		return e.Next()
	})
	return l
}

// startEarly starts the early parts not started yet.
func (l *lifecycle) startEarly() error { return l.start(true) }

// startAll starts the parts not started yet.
func (l *lifecycle) startAll() error { return l.start(false) }

// start starts the parts not started yet, in order, up to the first that
// fails, or with earlyOnly, the first that is not early. The parts started
// before a failure stop when the app terminates, as after a whole start;
// the parts after it never start.
func (l *lifecycle) start(earlyOnly bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed != nil {
		return l.failed
	}
	for ; l.started < len(l.parts); l.started++ {
		p := l.parts[l.started]
		if earlyOnly && !p.early {
			return nil
		}
		fn, err := p.start()
		if err != nil {
			l.failed = err
			return err
		}
		if fn != nil {
			l.stops = append(l.stops, &stop{name: p.name, fn: fn})
		}
	}
	return nil
}

// stop stops the parts started, in reverse order: a part stops before
// those it was built on. A failing stop is logged and does not keep the
// others from running.
func (l *lifecycle) stop() {
	l.mu.Lock()
	stops := slices.Clone(l.stops)
	l.mu.Unlock()
	for _, s := range slices.Backward(stops) {
		s.once.Do(func() {
			l.log.Debug("Stopping", "part", s.name)
			if err := s.fn(); err != nil {
				l.log.Error("Could not stop the "+s.name, "error", err)
			}
		})
	}
}
