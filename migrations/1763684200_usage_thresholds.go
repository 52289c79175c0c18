package migrations

import (
	"slices"

	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
	"github.com/pocketbase/pocketbase/tools/types"
)

// usage_thresholds records that a key crossed 80 % or 100 % of its day
// quota on a UTC day (package usage): one row per key, day and threshold,
// inserted in the transaction of the usage.threshold event and its audit
// record (the service's action usage.threshold), so that a second attempt
// (a restart, another instance on the same data directory) inserts nothing
// and tells no one.
func init() {
	m.Register(func(app core.App) error {
		keys, err := app.FindCollectionByNameOrId("api_keys")
		if err != nil {
			return err
		}
		c := core.NewBaseCollection("usage_thresholds")
		c.Fields.Add(
			&core.RelationField{Name: "api_key", Required: true, MaxSelect: 1, CollectionId: keys.Id, CascadeDelete: true},
			&core.TextField{Name: "day", Required: true, Pattern: `^\d{4}-\d{2}-\d{2}$`, Presentable: true,
				Help: "The UTC day whose window was crossed, YYYY-MM-DD."},
			&core.NumberField{Name: "threshold", Required: true, OnlyInt: true, Min: types.Pointer(1.0), Max: types.Pointer(100.0),
				Help: "The percentage of the day quota crossed: 80 or 100."},
		)
		c.AddIndex("idx_usage_thresholds_key_day_threshold", true, "`api_key`, `day`, `threshold`", "")
		c.AddIndex("idx_usage_thresholds_day", false, "`day`", "")
		if err := app.Save(c); err != nil {
			return err
		}
		log, err := app.FindCollectionByNameOrId("audit_log")
		if err != nil {
			return err
		}
		action, _ := log.Fields.GetByName("action").(*core.SelectField)
		if !slices.Contains(action.Values, "usage.threshold") {
			action.Values = append(action.Values, "usage.threshold")
		}
		return app.Save(log)
	}, func(app core.App) error {
		if _, err := app.DB().NewQuery("DELETE FROM audit_log WHERE action = 'usage.threshold'").Execute(); err != nil {
			return err
		}
		log, err := app.FindCollectionByNameOrId("audit_log")
		if err != nil {
			return err
		}
		action, _ := log.Fields.GetByName("action").(*core.SelectField)
		action.Values = slices.DeleteFunc(action.Values, func(a string) bool { return a == "usage.threshold" })
		if err := app.Save(log); err != nil {
			return err
		}
		c, err := app.FindCollectionByNameOrId("usage_thresholds")
		if err != nil {
			return err
		}
		return app.Delete(c)
	})
}
