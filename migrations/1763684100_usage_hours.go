package migrations

import (
	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
	"github.com/pocketbase/pocketbase/tools/types"
)

// usage_hours is each key's use per UTC hour, /v1 operation and outcome
// (package usage), one row for each, never one per request; it replaces
// api_key_usage, its use per UTC day. Each day moves to its 00:00 hour with
// the operation "unknown" (days did not keep it): its requests admitted by
// the limits become served (days did not tell 4xx and 5xx apart), its
// refusals with 429 limited, so that the day windows go on from the same
// counts.
func init() {
	m.Register(func(app core.App) error {
		keys, err := app.FindCollectionByNameOrId("api_keys")
		if err != nil {
			return err
		}
		hours := core.NewBaseCollection("usage_hours")
		hours.Fields.Add(
			&core.RelationField{Name: "api_key", Required: true, MaxSelect: 1, CollectionId: keys.Id, CascadeDelete: true},
			&core.DateField{Name: "hour", Required: true, Presentable: true, Help: "The UTC hour the requests were counted in."},
			&core.TextField{Name: "operation", Required: true, Max: 64,
				Help: "The /v1 operation (listPets, getPet, createPet, listCategories, getUsage); other: none of them " +
					"(the document, an unknown path or method); unknown: counted per day, before hours were kept."},
			&core.SelectField{Name: "outcome", Required: true, MaxSelect: 1, Values: []string{"served", "refused", "limited", "failed"},
				Help: "served: 1xx to 3xx; refused: 4xx but 429, the client's mistake; limited: 429, refused by a limit " +
					"(counted in no window); failed: 5xx. A day window counts every outcome but limited."},
			&core.NumberField{Name: "requests", OnlyInt: true, Min: types.Pointer(1.0)},
		)
		// One row per key, hour, operation and outcome: the flush adds to it
		// (INSERT ... ON CONFLICT); the hour alone serves the purge and the
		// reads of a day's every key.
		hours.AddIndex("idx_usage_hours_key_hour", true, "`api_key`, `hour`, `operation`, `outcome`", "")
		hours.AddIndex("idx_usage_hours_hour", false, "`hour`", "")
		if err := app.Save(hours); err != nil {
			return err
		}
		_, err = app.DB().NewQuery(`INSERT INTO usage_hours (api_key, hour, operation, outcome, requests)
			SELECT api_key, day || ' 00:00:00.000Z', 'unknown', 'served', requests - limited FROM api_key_usage WHERE requests > limited
			UNION ALL
			SELECT api_key, day || ' 00:00:00.000Z', 'unknown', 'limited', limited FROM api_key_usage WHERE limited > 0`).Execute()
		if err != nil {
			return err
		}
		days, err := app.FindCollectionByNameOrId("api_key_usage")
		if err != nil {
			return err
		}
		return app.Delete(days)
	}, func(app core.App) error {
		keys, err := app.FindCollectionByNameOrId("api_keys")
		if err != nil {
			return err
		}
		days := core.NewBaseCollection("api_key_usage")
		days.Fields.Add(
			&core.RelationField{Name: "api_key", Required: true, MaxSelect: 1, CollectionId: keys.Id, CascadeDelete: true},
			&core.TextField{Name: "day", Required: true, Pattern: `^\d{4}-\d{2}-\d{2}$`, Presentable: true,
				Help: "The UTC day, YYYY-MM-DD."},
			&core.NumberField{Name: "requests", OnlyInt: true, Min: types.Pointer(0.0),
				Help: "/v1 requests made with the key that day, refused ones included."},
			&core.NumberField{Name: "limited", OnlyInt: true, Min: types.Pointer(0.0),
				Help: "Of those, the requests refused with 429 (rate limit or ban). " +
					"Refused requests count in no window: requests minus limited is what the key's day quota counted that day."},
		)
		days.AddIndex("idx_api_key_usage_key_day", true, "`api_key`, `day`", "")
		days.AddIndex("idx_api_key_usage_day", false, "`day`", "")
		if err := app.Save(days); err != nil {
			return err
		}
		_, err = app.DB().NewQuery(`INSERT INTO api_key_usage (api_key, day, requests, limited)
			SELECT api_key, substr(hour, 1, 10), SUM(requests), SUM(CASE outcome WHEN 'limited' THEN requests ELSE 0 END)
			FROM usage_hours GROUP BY api_key, substr(hour, 1, 10)`).Execute()
		if err != nil {
			return err
		}
		hours, err := app.FindCollectionByNameOrId("usage_hours")
		if err != nil {
			return err
		}
		return app.Delete(hours)
	})
}
