package api

import (
	"context"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"
	"github.com/pocketbase/pocketbase/tools/router"
)

// The Error body is written by two layers of one middleware. The inner one
// runs inside PocketBase's activity logger, so that the request log records
// the status actually sent; it still returns the error, for the log's
// details. The outer one runs outside PocketBase's CORS and panic recovery,
// for the errors those return (priorities: middleware_order.go).
const (
	errorBodyOuterId = "petstoreErrorBodyOuter"
	errorBodyInnerId = "petstoreErrorBodyInner"
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

// uncleanPathGuard sends /v1 paths that Go's ServeMux would not route to the
// /v1 group through that group's catch-all 404: paths with "//", "." or ".."
// segments, which the mux redirects with an HTML 307 before any middleware
// runs, and paths whose "/" after v1 is escaped (/v1%2Fpets), which it routes
// by their escaped form to the site at /. Rewritten to refusedPathRoute, they
// are identified, counted and answered like any unknown path; sentURL then
// puts back the URL the client sent, for the message and the request log.
func uncleanPathGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isRefusedPath(r.URL) {
			sent := r.URL
			r = r.WithContext(context.WithValue(r.Context(), sentURLKey{}, sent))
			r.URL = &url.URL{Path: refusedPathRoute, RawQuery: sent.RawQuery}
		}
		next.ServeHTTP(w, r)
	})
}

// refusedPathRoute is where uncleanPathGuard routes refused paths: any path
// of the /v1 group's catch-all would do.
const refusedPathRoute = "/v1/"

// sentURLKey holds, in a request uncleanPathGuard rewrote, the URL the client sent.
type sentURLKey struct{}

// sentURL restores the URL of a request uncleanPathGuard rewrote. It is bound
// on the catch-all route only, where all of them land, and runs first.
func sentURL() *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id:       "petstoreSentURL",
		Priority: sentURLPriority,
		Func: func(e *core.RequestEvent) error {
			if sent, ok := e.Request.Context().Value(sentURLKey{}).(*url.URL); ok {
				e.Request.URL = sent
			}
			return e.Next()
		},
	}
}

// isRefusedPath reports whether u is under /v1 but not routed there as it is.
func isRefusedPath(u *url.URL) bool {
	return isV1Path(u.Path) && (!isCleanPath(u.Path) || !isV1Path(u.EscapedPath()))
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
