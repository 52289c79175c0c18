package logging

import (
	"context"
	"log/slog"

	"github.com/pocketbase/pocketbase/core"
)

// New is the service's one logger: each event goes to the console
// (stderr, as main configures it) and to PocketBase's logs, which the
// dashboard shows. A nil console logs to the dashboard only. An event
// logged with a request's context names its trace (traceId), as Tee does.
func New(app core.App, console slog.Handler) *slog.Logger {
	dashboard := dashboardHandler{app: app}
	if console == nil {
		return slog.New(Tee(dashboard))
	}
	return slog.New(Tee(console, dashboard))
}

// dashboardHandler hands records to the app's current logger, which
// PocketBase makes anew at each bootstrap.
type dashboardHandler struct {
	app   core.App
	attrs []slog.Attr
	group string
}

func (d dashboardHandler) handler() slog.Handler {
	h := d.app.Logger().Handler()
	if d.group != "" {
		h = h.WithGroup(d.group)
	}
	if len(d.attrs) > 0 {
		h = h.WithAttrs(d.attrs)
	}
	return h
}

func (d dashboardHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return d.app.Logger().Handler().Enabled(ctx, level)
}

func (d dashboardHandler) Handle(ctx context.Context, r slog.Record) error {
	return d.handler().Handle(ctx, r)
}

func (d dashboardHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	d.attrs = append(d.attrs[:len(d.attrs):len(d.attrs)], attrs...)
	return d
}

func (d dashboardHandler) WithGroup(name string) slog.Handler {
	if d.group != "" {
		name = d.group + "." + name
	}
	d.group = name
	return d
}
