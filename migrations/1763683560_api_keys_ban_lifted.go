package migrations

import (
	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
)

// When a ban was last lifted: every instance's limiter reads it with the key
// and forgets the rejections counted before it, once, whichever process
// lifted the ban.
func init() {
	m.Register(func(app core.App) error {
		keys, err := app.FindCollectionByNameOrId("api_keys")
		if err != nil {
			return err
		}
		keys.Fields.Add(&core.DateField{Name: "ban_lifted",
			Help: "When a ban was last lifted (staff page or `petstore keys unban`); written by the service."})
		return app.Save(keys)
	}, func(app core.App) error {
		keys, err := app.FindCollectionByNameOrId("api_keys")
		if err != nil {
			return err
		}
		keys.Fields.RemoveByName("ban_lifted")
		return app.Save(keys)
	})
}
