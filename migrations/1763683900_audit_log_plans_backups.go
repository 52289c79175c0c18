package migrations

import (
	"slices"

	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
)

// planAndBackupActions are the audit actions on plans (the dashboard's
// edits) and on PocketBase's backups (the dashboard's and its API's).
var planAndBackupActions = []string{
	"plan.changed",
	"backup.created", "backup.downloaded", "backup.uploaded", "backup.restored", "backup.deleted",
}

// The audit trail records the changes to plans and every backup's
// creation, download, upload, restore and deletion: a record of these is
// about neither a key nor an endpoint, and names what it is about in its
// details.
func init() {
	m.Register(func(app core.App) error {
		log, err := app.FindCollectionByNameOrId("audit_log")
		if err != nil {
			return err
		}
		action, _ := log.Fields.GetByName("action").(*core.SelectField)
		for _, a := range planAndBackupActions {
			if !slices.Contains(action.Values, a) {
				action.Values = append(action.Values, a)
			}
		}
		return app.Save(log)
	}, func(app core.App) error {
		if _, err := app.DB().NewQuery("DELETE FROM audit_log WHERE action LIKE 'plan.%' OR action LIKE 'backup.%'").Execute(); err != nil {
			return err
		}
		log, err := app.FindCollectionByNameOrId("audit_log")
		if err != nil {
			return err
		}
		action, _ := log.Fields.GetByName("action").(*core.SelectField)
		action.Values = slices.DeleteFunc(action.Values, func(a string) bool { return slices.Contains(planAndBackupActions, a) })
		return app.Save(log)
	})
}
