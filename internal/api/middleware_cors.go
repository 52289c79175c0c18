package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"

	"petstore/internal/limits"
	"petstore/internal/requestid"
)

// exposedHeaders are the /v1 response headers that browsers may read across
// origins (CORS itself is PocketBase's, configured by `serve --origins`):
// without them a web client could not page, follow Location, back off or
// name its request. They are named in answers to CORS requests only, those
// with an Origin, as PocketBase's Access-Control-Allow-Origin is: any other
// client reads every header, and each header costs every answer its place
// in net/http's header map, made for each answer and copied when the status
// is written.
var exposedHeaders = strings.Join(append([]string{
	"Link", "Location", "Idempotent-Replayed", "Deprecation", "Sunset", stabilityHeader, "WWW-Authenticate", "Allow", "ETag",
	requestid.ResponseHeader, requestid.Header,
}, limits.HeaderNames[:]...), ", ")

func exposeHeaders() *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id:       "petstoreExposeHeaders",
		Priority: exposeHeadersPriority,
		Func: func(e *core.RequestEvent) error {
			if e.Request.Header.Get("Origin") != "" {
				e.Response.Header().Set("Access-Control-Expose-Headers", exposedHeaders)
			}
			return e.Next()
		},
	}
}

// preflightHeaders gives OPTIONS requests the rate-limit headers without
// counting them. PocketBase's CORS middleware answers every OPTIONS with 204
// before the rate limit. A preflight never carries credentials: counting it
// would charge a browser client's network for calls its key makes, and past
// 60 a minute refuse the preflights, and so the calls, of every browser
// there. So a preflight reports its network's keyless window as it stands.
func preflightHeaders(l *limits.Limiter) *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id:       "petstorePreflightHeaders",
		Priority: preflightPriority,
		Func: func(e *core.RequestEvent) error {
			if e.Request.Method != http.MethodOptions {
				return e.Next()
			}
			d, err := l.PeekAnonymous(context.WithoutCancel(e.Request.Context()), e.RealIP())
			if err != nil {
				return err
			}
			d.SetHeaders(e.Response.Header())
			return e.Next()
		},
	}
}

// preflightAllows makes an OPTIONS answer name the route's methods: Allow
// lists them with OPTIONS (RFC 9110, 9.3.7), and a CORS preflight allows
// exactly allow, the route's methods as its 405's Allow lists them ("" for
// none). PocketBase's CORS
// middleware decides whether the origin may call (serve --origins) and
// answers the preflight, but lists the same methods for every path; this
// puts the route's own in their place as the answer is written. With none,
// a browser still sends the methods CORS always allows (GET, HEAD, POST), so
// that its client reads the 404.
func preflightAllows(allow string) *hook.Handler[*core.RequestEvent] {
	optionsAllow := http.MethodOptions
	if allow != "" {
		optionsAllow = allow + ", " + http.MethodOptions
	}
	return &hook.Handler[*core.RequestEvent]{
		Id:       "petstorePreflightAllows",
		Priority: preflightPriority,
		Func: func(e *core.RequestEvent) error {
			if e.Request.Method != http.MethodOptions {
				return e.Next()
			}
			w := e.Response
			w.Header().Set("Allow", optionsAllow)
			e.Response = &preflightWriter{ResponseWriter: w, allow: allow}
			defer func() { e.Response = w }()
			return e.Next()
		},
	}
}

// preflightWriter replaces Access-Control-Allow-Methods, when the answer has
// it, before the answer's header is written.
type preflightWriter struct {
	http.ResponseWriter
	allow string
}

func (w *preflightWriter) WriteHeader(status int) {
	w.setAllowMethods()
	w.ResponseWriter.WriteHeader(status)
}

func (w *preflightWriter) Write(b []byte) (int, error) {
	w.setAllowMethods()
	return w.ResponseWriter.Write(b)
}

func (w *preflightWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *preflightWriter) setAllowMethods() {
	h := w.Header()
	const name = "Access-Control-Allow-Methods"
	switch {
	case h.Get(name) == "":
	case w.allow == "":
		h.Del(name)
	default:
		h.Set(name, w.allow)
	}
}
