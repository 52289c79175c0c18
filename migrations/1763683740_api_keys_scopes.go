package migrations

import (
	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
)

// What a key may do: its scopes, "resource:action" (pets:read for listPets
// and getPet, pets:write for createPet). Every key saved before gets both,
// so that no client's key changes what it may do. The dashboard shows them
// after last_used; only the staff page, its API and `keys create` set them.
func init() {
	m.Register(func(app core.App) error {
		keys, err := app.FindCollectionByNameOrId("api_keys")
		if err != nil {
			return err
		}
		position := len(keys.Fields)
		for i, f := range keys.Fields {
			if f.GetName() == "last_used" {
				position = i + 1
			}
		}
		keys.Fields.AddAt(position, &core.SelectField{
			Name: "scopes", Required: true, MaxSelect: 2, Values: []string{"pets:read", "pets:write"},
			Help: "What the key may do: pets:read (list and get pets), pets:write (add pets). Change them on the staff page " +
				"(/staff/); edits here are ignored, so that a form opened earlier cannot widen them.",
		})
		if err := app.Save(keys); err != nil {
			return err
		}
		_, err = app.DB().NewQuery(`UPDATE {{api_keys}} SET [[scopes]] = '["pets:read","pets:write"]'`).Execute()
		return err
	}, func(app core.App) error {
		keys, err := app.FindCollectionByNameOrId("api_keys")
		if err != nil {
			return err
		}
		keys.Fields.RemoveByName("scopes")
		return app.Save(keys)
	})
}
