package migrations

import (
	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
	"github.com/pocketbase/pocketbase/tools/types"
)

// seededPlans are the spec's plans. Enterprise quotas are agreed per key (see
// api_keys.per_minute/per_day); its row ships with business values so that an
// enterprise key without overrides is never locked out.
var seededPlans = []struct {
	name              string
	perMinute, perDay int
}{
	{"free", 60, 1_000},
	{"pro", 300, 10_000},
	{"business", 1_000, 100_000},
	{"enterprise", 1_000, 100_000},
}

func init() {
	m.Register(func(app core.App) error {
		plans := core.NewBaseCollection("plans")
		plans.Fields.Add(
			&core.TextField{Name: "name", Required: true, Max: 50, Pattern: "^[a-z][a-z0-9_-]*$", Presentable: true},
			&core.NumberField{Name: "per_minute", Required: true, OnlyInt: true, Min: types.Pointer(1.0), Help: "Requests per minute."},
			&core.NumberField{Name: "per_day", Required: true, OnlyInt: true, Min: types.Pointer(1.0), Help: "Requests per day."},
			&core.NumberField{Name: "ban_after", OnlyInt: true, Min: types.Pointer(0.0),
				Help: "Rejected (429) requests within one minute that ban a key; 0 means the per-minute quota."},
			&core.NumberField{Name: "ban_minutes", OnlyInt: true, Min: types.Pointer(0.0),
				Help: "How long a ban lasts, in minutes; 0 disables bans for this plan."},
			&core.AutodateField{Name: "created", OnCreate: true},
			&core.AutodateField{Name: "updated", OnCreate: true, OnUpdate: true},
		)
		plans.AddIndex("idx_plans_name", true, "`name`", "")
		if err := app.Save(plans); err != nil {
			return err
		}

		for _, p := range seededPlans {
			r := core.NewRecord(plans)
			r.Set("name", p.name)
			r.Set("per_minute", p.perMinute)
			r.Set("per_day", p.perDay)
			r.Set("ban_after", 0)
			r.Set("ban_minutes", 15)
			if err := app.Save(r); err != nil {
				return err
			}
		}
		return nil
	}, func(app core.App) error {
		plans, err := app.FindCollectionByNameOrId("plans")
		if err != nil {
			return err
		}
		return app.Delete(plans)
	})
}
