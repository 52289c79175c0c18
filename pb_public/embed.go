// Package pbpublic is the site served at /, embedded in the binary. Only the
// files matched below are served (this Go file is not).
//
// docs/ is the API reference page; docs/redoc/ holds Redoc 2.5.4's
// standalone bundle with its licences, from the npm package redoc@2.5.4.
// staff/ is the staff page, which draws its charts itself (SVG);
// staff/vendor/ holds, with its licence, the PocketBase JS SDK 0.28.1 (npm
// pocketbase@0.28.1, dist/pocketbase.umd.js).
package pbpublic

import (
	"embed"
	"net/http"

	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"
)

//go:embed *.html docs/*.html docs/redoc staff
var FS embed.FS

// Handler serves FS: GET and HEAD, 405 with Allow for any other method. It
// is bound method-less, so as not to conflict with the method-less /v1
// routes.
func Handler() func(*core.RequestEvent) error {
	serve := apis.Static(FS, false)
	return func(e *core.RequestEvent) error {
		if e.Request.Method != http.MethodGet && e.Request.Method != http.MethodHead {
			e.Response.Header().Set("Allow", "GET, HEAD")
			return e.Error(http.StatusMethodNotAllowed, "Method not allowed.", nil)
		}
		return serve(e)
	}
}
