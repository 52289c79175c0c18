package hooks

import (
	"github.com/pocketbase/pocketbase/core"

	"petstore/apikeys"
)

// bindAPIKeyRecordHooks keeps key hashes out of every API response.
// PocketBase unhides hidden fields for superusers (the dashboard included),
// so key_hash is hidden again after its enrichment has run.
func bindAPIKeyRecordHooks(app core.App) {
	app.OnRecordEnrich(apikeys.Collection).BindFunc(func(e *core.RecordEnrichEvent) error {
		err := e.Next()
		e.Record.Hide(apikeys.HashField)
		return err
	})
}
