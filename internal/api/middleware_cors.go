package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"

	"petstore/limits"
)

// exposedHeaders are the /v1 response headers that browsers may read across
// origins (CORS itself is PocketBase's, configured by `serve --origins`):
// without them a web client could not page, follow Location or back off.
var exposedHeaders = strings.Join(append([]string{
	"Link", "Location", "Idempotent-Replayed", "Deprecation", "Sunset", "WWW-Authenticate", "Allow", "ETag",
}, limits.HeaderNames...), ", ")

func exposeHeaders() *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id:       "petstoreExposeHeaders",
		Priority: errorBodyOuterPriority + 1, // before anything can answer
		Func: func(e *core.RequestEvent) error {
			e.Response.Header().Set("Access-Control-Expose-Headers", exposedHeaders)
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
		Priority: apis.DefaultCorsMiddlewarePriority - 1,
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
