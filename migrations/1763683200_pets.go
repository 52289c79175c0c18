package migrations

import (
	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
	"github.com/pocketbase/pocketbase/tools/types"
)

// MaxSafeInteger is the largest integer that JSON clients (and PocketBase's
// float64 number fields) represent exactly: 2^53-1.
const MaxSafeInteger = 1<<53 - 1

// PetIDPattern makes the record id the pet's public numeric id: 15 digits
// without a leading zero always fit int64 and JSON's safe-integer range, and a
// fixed length keeps text order equal to numeric order.
const PetIDPattern = "[1-9][0-9]{14}"

// PetStatuses are the values of the spec's PetStatus, in its order.
var PetStatuses = []string{"available", "pending", "sold"}

func init() {
	m.Register(func(app core.App) error {
		pets := core.NewBaseCollection("pets")

		id := pets.Fields.GetByName("id").(*core.TextField)
		id.Pattern = "^" + PetIDPattern + "$"
		id.AutogeneratePattern = PetIDPattern
		id.Min, id.Max = 15, 15

		pets.Fields.Add(
			&core.TextField{Name: "name", Required: true, Min: 1, Max: 100, Presentable: true},
			&core.NumberField{
				Name:     "categoryId",
				Required: true,
				OnlyInt:  true,
				Min:      types.Pointer(1.0),
				Max:      types.Pointer(float64(MaxSafeInteger)),
			},
			&core.SelectField{Name: "status", Values: PetStatuses, MaxSelect: 1},
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
