package hooks

import (
	"net/http"
	"path"
	"strings"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"
	"github.com/pocketbase/pocketbase/tools/router"
)

const (
	errorBodyMiddlewareId = "petstoreErrorBody"
	// Below every PocketBase middleware but the www redirect, so that the
	// panic recovery (-1030), body limit (-990) and CORS (-1041) errors are
	// reshaped too.
	errorBodyMiddlewarePriority = -2000
)

// errorBody gives every error under /v1 the spec's Error shape, whatever
// produced it: our handlers, PocketBase's catch-all 404, its body limit or its
// panic recovery.
func errorBody() *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id:       errorBodyMiddlewareId,
		Priority: errorBodyMiddlewarePriority,
		Func: func(e *core.RequestEvent) error {
			err := e.Next()
			if err == nil {
				return nil
			}
			if w, ok := e.Response.(router.WriteTracker); ok && w.Written() {
				return err // the response is already on its way
			}
			writeError(e.Response, asError(err))
			return nil
		},
	}
}

// uncleanPathGuard answers /v1 paths with "//", "." or ".." segments with a
// 404 Error. Go's ServeMux would redirect them with an HTML 307 before any
// middleware runs.
func uncleanPathGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if (p == "/v1" || strings.HasPrefix(p, "/v1/")) && !isCleanPath(p) {
			writeError(w, newError(http.StatusNotFound, CodeNotFound, "No such resource."))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func isCleanPath(p string) bool {
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	return clean == p
}
