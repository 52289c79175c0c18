package migrations

import (
	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
)

// usage_rollups shows usage_hours in the dashboard as a view, with each
// key's customer beside it: superusers browse, filter and sort it, and no
// one writes it (a view has no create, update or delete). Its rules stay
// nil: superusers only.
func init() {
	m.Register(func(app core.App) error {
		view := core.NewViewCollection("usage_rollups")
		view.ViewQuery = `SELECT u.id, u.api_key, k.customer, u.hour, u.operation, u.outcome, u.requests
			FROM usage_hours u LEFT JOIN api_keys k ON k.id = u.api_key`
		return app.Save(view)
	}, func(app core.App) error {
		view, err := app.FindCollectionByNameOrId("usage_rollups")
		if err != nil {
			return err
		}
		return app.Delete(view)
	})
}
