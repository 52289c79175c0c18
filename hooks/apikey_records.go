package hooks

import (
	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/apikeys"
)

// errCreateKeyInDashboard answers the dashboard's "New record" on api_keys:
// only a key's hash is stored, so a key made there would be one nobody has.
const errCreateKeyInDashboard = "API keys are issued on the staff page, /staff/, or on the command line with " +
	"'petstore keys create', which show the new key once. The dashboard cannot: only a key's hash is stored."

// bindAPIKeyRecordHooks keeps the dashboard (PocketBase's records API) from
// making or breaking keys. Its edit form sends every field back as it was
// loaded, so a form opened before a ban, a roll or a use and saved later would
// lift the ban, undo the roll or turn back the counts: a save there leaves the
// fields only the service writes as they are stored. Lifting a ban is an
// explicit act (apikeys.Unban: the staff page or `petstore keys unban`).
func bindAPIKeyRecordHooks(app core.App) {
	app.OnRecordCreateRequest(apikeys.Collection).BindFunc(func(e *core.RecordRequestEvent) error {
		return e.BadRequestError(errCreateKeyInDashboard, nil)
	})
	app.OnRecordUpdateRequest(apikeys.Collection).BindFunc(func(e *core.RecordRequestEvent) error {
		stored := e.Record.Original()
		for _, field := range apikeys.ServiceFields {
			e.Record.Set(field, stored.Get(field))
		}
		return e.Next()
	})
}
