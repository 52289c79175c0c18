package migrations

import (
	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
)

// A rolled key keeps its previous secret's hash until its grace period ends,
// so that clients can move to the new secret without a gap.
func init() {
	m.Register(func(app core.App) error {
		keys, err := app.FindCollectionByNameOrId("api_keys")
		if err != nil {
			return err
		}
		keys.Fields.Add(
			&core.TextField{Name: "previous_hash", Hidden: true, Pattern: "^[0-9a-f]{64}$",
				Help: "Hash of the secret before the last roll; written by the service."},
			&core.TextField{Name: "previous_prefix", Max: 20,
				Help: "The first characters of the secret before the last roll; written by the service."},
			&core.DateField{Name: "previous_until",
				Help: "Until when the secret before the last roll still works; written by the service."},
		)
		keys.AddIndex("idx_api_keys_previous_hash", false, "`previous_hash`", "")
		return app.Save(keys)
	}, func(app core.App) error {
		keys, err := app.FindCollectionByNameOrId("api_keys")
		if err != nil {
			return err
		}
		keys.RemoveIndex("idx_api_keys_previous_hash")
		for _, name := range []string{"previous_hash", "previous_prefix", "previous_until"} {
			keys.Fields.RemoveByName(name)
		}
		return app.Save(keys)
	})
}
