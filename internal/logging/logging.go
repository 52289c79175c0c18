// Package logging builds petstore's console handler, the one place where the
// service's events meet stderr (journald, docker logs), and joins it to the
// handlers of other destinations.
package logging

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"petstore/internal/tracing"
)

// Formats of the console.
const (
	Text = "text" // key=value pairs, one event a line
	JSON = "json" // one JSON object a line, with at least time, level and msg
)

// Console returns the handler writing events of at least level to w in
// format (Text or JSON); its errors name the flags that set them.
func Console(w io.Writer, format, level string) (slog.Handler, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("invalid --log-level (or PETSTORE_LOG_LEVEL) %q: debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch strings.ToLower(format) {
	case Text:
		return slog.NewTextHandler(w, opts), nil
	case JSON:
		return slog.NewJSONHandler(w, opts), nil
	}
	return nil, fmt.Errorf("invalid --log-format (or PETSTORE_LOG_FORMAT) %q: text or json", format)
}

// Tee returns a handler that hands each record to every one of handlers
// that is enabled for its level. A record logged with a context that
// carries a span (a request's, while tracing is on) gets its trace id as
// traceId, by which a trace's viewer finds the request's log lines.
func Tee(handlers ...slog.Handler) slog.Handler { return tee(handlers) }

type tee []slog.Handler

func (t tee) Enabled(ctx context.Context, level slog.Level) bool {
	for _, h := range t {
		if h.Enabled(ctx, level) {
			return true
		}
	}
	return false
}

func (t tee) Handle(ctx context.Context, r slog.Record) error {
	if id := tracing.ID(ctx); id != "" {
		r.AddAttrs(slog.String("traceId", id))
	}
	var errs []error
	for _, h := range t {
		if h.Enabled(ctx, r.Level) {
			errs = append(errs, h.Handle(ctx, r.Clone()))
		}
	}
	return errors.Join(errs...)
}

func (t tee) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make(tee, len(t))
	for i, h := range t {
		out[i] = h.WithAttrs(attrs)
	}
	return out
}

func (t tee) WithGroup(name string) slog.Handler {
	out := make(tee, len(t))
	for i, h := range t {
		out[i] = h.WithGroup(name)
	}
	return out
}

// Milliseconds is d in milliseconds, to the microsecond: every duration in
// the service's events is a number of milliseconds in a field named …_ms,
// one type whatever the format (slog writes a Duration as "6ms" in text and
// as nanoseconds in JSON).
func Milliseconds(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
