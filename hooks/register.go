// Package hooks binds petstore to a PocketBase app: the /v1 routes and their
// middleware, the embedded site, and the record hooks of pets.
package hooks

import (
	"io/fs"
	"net/http"
	"strings"

	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"
)

// Register binds everything petstore adds to app. public is the site served
// at / (pb_public, embedded in the binary).
func Register(app core.App, public fs.FS) {
	app.OnServe().Bind(&hook.Handler[*core.ServeEvent]{
		Id: "petstoreServe",
		Func: func(se *core.ServeEvent) error {
			addRoutes(se.Router.Group("/v1"))
			// Method-less, or it would conflict with the method-less /v1 routes.
			se.Router.Route("", "/{path...}", staticSite(public))

			if err := se.Next(); err != nil {
				return err
			}
			// The handler exists only once the mux is built, in Next.
			se.Server.Handler = restoreRequestBody(uncleanPathGuard(se.Server.Handler))
			return nil
		},
	})
	bindPetRecordHooks(app)
}

func staticSite(public fs.FS) func(*core.RequestEvent) error {
	serve := apis.Static(public, false)
	return func(e *core.RequestEvent) error {
		if e.Request.Method != http.MethodGet && e.Request.Method != http.MethodHead {
			e.Response.Header().Set("Allow", "GET, HEAD")
			return e.Error(http.StatusMethodNotAllowed, "Method not allowed.", nil)
		}
		return serve(e)
	}
}

// bindPetRecordHooks applies the pets rules that hold however a pet is
// saved: through /v1 or in the dashboard.
func bindPetRecordHooks(app core.App) {
	normalize := func(e *core.RecordEvent) error {
		e.Record.Set("name", strings.TrimSpace(e.Record.GetString("name")))
		return e.Next()
	}
	app.OnRecordCreate(petsCollection).BindFunc(func(e *core.RecordEvent) error {
		if e.Record.GetString("status") == "" {
			e.Record.Set("status", "available") // the documented default
		}
		return normalize(e)
	})
	app.OnRecordUpdate(petsCollection).BindFunc(normalize)
}
