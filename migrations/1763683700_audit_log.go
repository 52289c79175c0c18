package migrations

import (
	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
)

// audit_log is the append-only trail of changes to API keys (package
// audit): superusers read it; nobody writes it but the service (its rules
// are superusers-only, and hooks refuse every change through the records
// API, superusers included).
func init() {
	m.Register(func(app core.App) error {
		log := core.NewBaseCollection("audit_log")
		log.Fields.Add(
			&core.SelectField{Name: "action", Required: true, MaxSelect: 1, Presentable: true, Values: []string{
				"key.created", "key.rolled", "key.revoked", "key.expiry_changed", "key.ban_lifted",
				"key.banned", "key.scopes_changed", "key.quota_changed",
			}},
			&core.TextField{Name: "key", Required: true, Max: 15, Help: "The api_keys record id."},
			&core.TextField{Name: "actor", Required: true, Max: 64,
				Help: `The superuser's record id; "cli" for the keys command; "system" for the service (bans).`},
			&core.TextField{Name: "actor_email", Max: 255},
			&core.TextField{Name: "address", Max: 64, Help: "The client address of the change, when it came over HTTP."},
			&core.JSONField{Name: "details", MaxSize: 4096, Help: "The values before and after."},
			&core.AutodateField{Name: "created", OnCreate: true},
		)
		log.AddIndex("idx_audit_log_key_created", false, "`key`, `created`", "")
		log.AddIndex("idx_audit_log_created", false, "`created`", "")
		return app.Save(log)
	}, func(app core.App) error {
		log, err := app.FindCollectionByNameOrId("audit_log")
		if err != nil {
			return err
		}
		return app.Delete(log)
	})
}
