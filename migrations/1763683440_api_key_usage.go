package migrations

import (
	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
	"github.com/pocketbase/pocketbase/tools/types"
)

// api_key_usage is each key's use per UTC day (package usage), kept 90 days.
func init() {
	m.Register(func(app core.App) error {
		keys, err := app.FindCollectionByNameOrId("api_keys")
		if err != nil {
			return err
		}
		usage := core.NewBaseCollection("api_key_usage")
		usage.Fields.Add(
			&core.RelationField{Name: "api_key", Required: true, MaxSelect: 1, CollectionId: keys.Id, CascadeDelete: true},
			&core.TextField{Name: "day", Required: true, Pattern: `^\d{4}-\d{2}-\d{2}$`, Presentable: true,
				Help: "The UTC day, YYYY-MM-DD."},
			&core.NumberField{Name: "requests", OnlyInt: true, Min: types.Pointer(0.0),
				Help: "/v1 requests made with the key that day, refused ones included."},
			&core.NumberField{Name: "limited", OnlyInt: true, Min: types.Pointer(0.0),
				Help: "Of those, the requests refused with 429 (rate limit or ban)."},
		)
		// One row per key and day: the flush adds to it (INSERT ... ON CONFLICT).
		usage.AddIndex("idx_api_key_usage_key_day", true, "`api_key`, `day`", "")
		usage.AddIndex("idx_api_key_usage_day", false, "`day`", "")
		return app.Save(usage)
	}, func(app core.App) error {
		usage, err := app.FindCollectionByNameOrId("api_key_usage")
		if err != nil {
			return err
		}
		return app.Delete(usage)
	})
}
