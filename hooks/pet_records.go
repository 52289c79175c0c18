package hooks

import (
	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/pets"
)

// bindPetRecordHooks applies the pets rules to pets saved as records: in the
// dashboard or through PocketBase's records API.
func bindPetRecordHooks(app core.App) {
	normalize := func(e *core.RecordEvent) error {
		e.Record.Set("name", pets.Name(e.Record.GetString("name")))
		return e.Next()
	}
	app.OnRecordCreate(pets.Collection).BindFunc(func(e *core.RecordEvent) error {
		e.Record.Set("status", pets.NewStatus(e.Record.GetString("status")))
		return normalize(e)
	})
	app.OnRecordUpdate(pets.Collection).BindFunc(normalize)
}
