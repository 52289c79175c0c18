package migrations

import (
	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
)

// The staff page lists keys a page at a time, newest first, by name or by
// last use: with these indexes a page reads its rows in order instead of
// sorting every key, which keeps it fast with thousands of keys.
func init() {
	m.Register(func(app core.App) error {
		keys, err := app.FindCollectionByNameOrId("api_keys")
		if err != nil {
			return err
		}
		keys.AddIndex("idx_api_keys_created", false, "`created`, `id`", "")
		keys.AddIndex("idx_api_keys_name", false, "`name` COLLATE NOCASE, `id`", "")
		keys.AddIndex("idx_api_keys_last_used", false, "`last_used`, `created`, `id`", "")
		return app.Save(keys)
	}, func(app core.App) error {
		keys, err := app.FindCollectionByNameOrId("api_keys")
		if err != nil {
			return err
		}
		for _, name := range []string{"idx_api_keys_created", "idx_api_keys_name", "idx_api_keys_last_used"} {
			keys.RemoveIndex(name)
		}
		return app.Save(keys)
	})
}
