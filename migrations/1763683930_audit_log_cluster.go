package migrations

import (
	"slices"

	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
)

// clusterActions are the audit actions of cluster mode, whose actor is the
// service itself.
var clusterActions = []string{"cluster.promoted", "cluster.stepped_down"}

// The audit trail records cluster mode's changes of leader: a record about
// neither a key nor an endpoint.
func init() {
	m.Register(func(app core.App) error {
		log, err := app.FindCollectionByNameOrId("audit_log")
		if err != nil {
			return err
		}
		action, _ := log.Fields.GetByName("action").(*core.SelectField)
		for _, a := range clusterActions {
			if !slices.Contains(action.Values, a) {
				action.Values = append(action.Values, a)
			}
		}
		return app.Save(log)
	}, func(app core.App) error {
		if _, err := app.DB().NewQuery("DELETE FROM audit_log WHERE action LIKE 'cluster.%'").Execute(); err != nil {
			return err
		}
		log, err := app.FindCollectionByNameOrId("audit_log")
		if err != nil {
			return err
		}
		action, _ := log.Fields.GetByName("action").(*core.SelectField)
		action.Values = slices.DeleteFunc(action.Values, func(a string) bool { return slices.Contains(clusterActions, a) })
		return app.Save(log)
	})
}
