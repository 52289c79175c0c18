package migrations

import (
	"slices"

	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
)

// The audit trail records each CSV export of the usage history from the
// staff page, with the range it covered.
func init() {
	const exported = "usage.exported"
	m.Register(func(app core.App) error {
		log, err := app.FindCollectionByNameOrId("audit_log")
		if err != nil {
			return err
		}
		action, _ := log.Fields.GetByName("action").(*core.SelectField)
		if !slices.Contains(action.Values, exported) {
			action.Values = append(action.Values, exported)
		}
		return app.Save(log)
	}, func(app core.App) error {
		if _, err := app.DB().NewQuery("DELETE FROM audit_log WHERE action = 'usage.exported'").Execute(); err != nil {
			return err
		}
		log, err := app.FindCollectionByNameOrId("audit_log")
		if err != nil {
			return err
		}
		action, _ := log.Fields.GetByName("action").(*core.SelectField)
		action.Values = slices.DeleteFunc(action.Values, func(a string) bool { return a == exported })
		return app.Save(log)
	})
}
