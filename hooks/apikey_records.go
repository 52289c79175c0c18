package hooks

import (
	validation "github.com/pocketbase/ozzo-validation/v4"
	"github.com/pocketbase/pocketbase/core"

	"petstore/apikeys"
)

// bindAPIKeyRecordHooks keeps a key's hash as it was created. Staff see the
// hash in the dashboard (it cannot be turned back into the key, and the
// dashboard's form sends every field back when staff revoke a key or lift a
// ban), but an edited hash would silently turn the key into one nobody has.
func bindAPIKeyRecordHooks(app core.App) {
	app.OnRecordUpdate(apikeys.Collection).BindFunc(func(e *core.RecordEvent) error {
		if e.Record.GetString(apikeys.HashField) != e.Record.Original().GetString(apikeys.HashField) {
			return validation.Errors{apikeys.HashField: validation.NewError("validation_key_hash_fixed",
				"The key hash cannot be changed: revoke the key and create a new one.")}
		}
		return e.Next()
	})
}
