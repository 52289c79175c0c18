package migrations

import (
	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
)

// A plan says whose windows its keys count in: "key", each key its own
// minute and day windows, or "customer", the windows of the key's customer,
// shared by every key of it (package limits). Every plan there is counts
// per key, as before; a plan left empty counts per key too.
func init() {
	m.Register(func(app core.App) error {
		plans, err := app.FindCollectionByNameOrId("plans")
		if err != nil {
			return err
		}
		plans.Fields.Add(&core.SelectField{Name: "counted", MaxSelect: 1, Values: []string{"key", "customer"},
			Help: "Whose windows the plan's keys count in: key (each key its own, the default) or customer " +
				"(the keys of one customer share one minute and one day window; a key with its own quota counts per key)."})
		if err := app.Save(plans); err != nil {
			return err
		}
		_, err = app.DB().NewQuery("UPDATE plans SET counted = 'key' WHERE counted = ''").Execute()
		return err
	}, func(app core.App) error {
		plans, err := app.FindCollectionByNameOrId("plans")
		if err != nil {
			return err
		}
		plans.Fields.RemoveByName("counted")
		return app.Save(plans)
	})
}
