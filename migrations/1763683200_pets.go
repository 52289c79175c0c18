package migrations

import (
	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
	"github.com/pocketbase/pocketbase/tools/types"
)

// The pets collection as this migration made it. The literals are this
// migration's own: a later rule is a later migration.
const (
	// maxSafeInteger is the largest integer that JSON clients (and
	// PocketBase's float64 number fields) represent exactly: 2^53-1.
	maxSafeInteger = 1<<53 - 1
	// petIDPattern makes the record id the pet's public numeric id: 15
	// digits without a leading zero always fit int64 and JSON's safe-integer
	// range, and a fixed length keeps text order equal to numeric order.
	petIDPattern = "[1-9][0-9]{14}"
)

func init() {
	m.Register(func(app core.App) error {
		pets := core.NewBaseCollection("pets")

		id := pets.Fields.GetByName("id").(*core.TextField)
		id.Pattern = "^" + petIDPattern + "$"
		id.AutogeneratePattern = petIDPattern
		id.Min, id.Max = 15, 15

		pets.Fields.Add(
			&core.TextField{Name: "name", Required: true, Min: 1, Max: 100, Presentable: true},
			&core.NumberField{
				Name:     "categoryId",
				Required: true,
				OnlyInt:  true,
				Min:      types.Pointer(1.0),
				Max:      types.Pointer(float64(maxSafeInteger)),
			},
			&core.SelectField{Name: "status", Values: []string{"available", "pending", "sold"}, MaxSelect: 1},
			&core.AutodateField{Name: "created", OnCreate: true},
			&core.AutodateField{Name: "updated", OnCreate: true, OnUpdate: true},
		)
		// The list operation filters by status and pages by id.
		pets.AddIndex("idx_pets_status_id", false, "`status`, `id`", "")

		return app.Save(pets)
	}, func(app core.App) error {
		pets, err := app.FindCollectionByNameOrId("pets")
		if err != nil {
			return err
		}
		return app.Delete(pets)
	})
}
