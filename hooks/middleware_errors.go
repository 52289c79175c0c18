package hooks

import (
	"net/http"
	"path"
	"strings"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"
	"github.com/pocketbase/pocketbase/tools/router"
)

// The Error body is written by two layers of one middleware. The inner one
// runs inside PocketBase's activity logger (-1040), so that the request log
// records the status actually sent; it still returns the error, for the log's
// details. The outer one runs outside PocketBase's CORS (-1041) and panic
// recovery (-1030), for the errors those return.
const (
	errorBodyOuterId       = "petstoreErrorBodyOuter"
	errorBodyOuterPriority = -2000
	errorBodyInnerId       = "petstoreErrorBodyInner"
	errorBodyInnerPriority = -1025 // after the panic recovery, before identifyKey (-1005)
)

// errorBody gives every error under /v1 the spec's Error shape, whatever
// produced it: our handlers, PocketBase's catch-all 404, its body limit or its
// panic recovery.
func errorBody(id string, priority int) *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id:       id,
		Priority: priority,
		Func: func(e *core.RequestEvent) error {
			err := e.Next()
			if err == nil {
				return nil
			}
			if w, ok := e.Response.(router.WriteTracker); !ok || !w.Written() {
				writeError(e.Response, asError(err))
			}
			return err // written: PocketBase's final error handler leaves it be
		},
	}
}

// uncleanPathGuard answers /v1 paths that Go's ServeMux would not route to
// the /v1 group with a 404 Error: paths with "//", "." or ".." segments,
// which the mux redirects with an HTML 307 before any middleware runs, and
// paths whose "/" after v1 is escaped (/v1%2Fpets), which it routes by their
// escaped form to the site at /.
func uncleanPathGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if isV1Path(p) && (!isCleanPath(p) || !isV1Path(r.URL.EscapedPath())) {
			writeError(w, newError(http.StatusNotFound, CodeNotFound, "No such resource."))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func isV1Path(p string) bool {
	return p == "/v1" || strings.HasPrefix(p, "/v1/")
}

func isCleanPath(p string) bool {
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	return clean == p
}
