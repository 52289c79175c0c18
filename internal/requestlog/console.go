package requestlog

import (
	"log/slog"
	"time"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/logging"
	"petstore/internal/requestid"
)

// maxConsolePath bounds the path a console line quotes: clients choose it.
const maxConsolePath = 200

// toConsole logs a request on the console when the service's log shows it:
// a 5xx as an error, a slow one as a warning, any with AccessLog, each with
// the request's id (Request-Id, which the client has too). A line names the method, the path without its query (which may
// hold a cursor), the status, the duration and the client's address; never
// a header, so never a key.
func (l *Logger) toConsole(e *core.RequestEvent, err error, took time.Duration) {
	status := StatusOf(e, err)
	slow := l.cfg.SlowRequest > 0 && took > l.cfg.SlowRequest
	if status < 500 && !slow && !l.cfg.AccessLog {
		return
	}
	attrs := []slog.Attr{
		slog.String("method", cut(e.Request.Method, 50)),
		slog.String("path", cut(e.Request.URL.EscapedPath(), maxConsolePath)),
		slog.Int("status", status),
		slog.Float64("took_ms", logging.Milliseconds(took)),
		slog.String("client", e.RealIP()),
		slog.String("requestId", requestid.From(e.Request.Context())),
	}
	level, msg := slog.LevelInfo, "Request"
	switch {
	case status >= 500:
		level, msg = slog.LevelError, "Request failed"
		if err != nil {
			attrs = append(attrs, slog.String("error", err.Error()))
		}
	case slow:
		level, msg = slog.LevelWarn, "Slow request"
	}
	l.cfg.Console.LogAttrs(e.Request.Context(), level, msg, attrs...)
}
