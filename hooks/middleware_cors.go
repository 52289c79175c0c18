package hooks

import (
	"strings"

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
