package migrations

import (
	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
	"github.com/pocketbase/pocketbase/tools/types"
)

func init() {
	m.Register(func(app core.App) error {
		plans, err := app.FindCollectionByNameOrId("plans")
		if err != nil {
			return err
		}

		keys := core.NewBaseCollection("api_keys")
		keys.Fields.Add(
			&core.TextField{Name: "name", Max: 100, Presentable: true},
			&core.RelationField{Name: "plan", Required: true, MaxSelect: 1, CollectionId: plans.Id},
			// Only the SHA-256 of a key is stored; the key itself is shown once, at creation.
			&core.TextField{Name: "key_hash", Required: true, Hidden: true, Pattern: "^[0-9a-f]{64}$"},
			&core.TextField{Name: "prefix", Max: 20, Help: "The first characters of the key, to recognise it."},
			&core.BoolField{Name: "revoked"},
			&core.DateField{Name: "expires", Help: "Empty: never expires."},
			&core.NumberField{Name: "per_minute", OnlyInt: true, Min: types.Pointer(1.0),
				Help: "Overrides the plan's per-minute quota when set."},
			&core.NumberField{Name: "per_day", OnlyInt: true, Min: types.Pointer(1.0),
				Help: "Overrides the plan's per-day quota when set."},
			&core.DateField{Name: "banned_until", Help: "Set by the rate limiter; clear it to lift a ban."},
			&core.DateField{Name: "last_used"},
			// Mirrors of the day window, written every few seconds, so that staff
			// see usage and an instance without Redis restores it after a restart.
			&core.NumberField{Name: "day_used", OnlyInt: true, Min: types.Pointer(0.0),
				Help: "Requests counted in the current day window (updated every few seconds)."},
			&core.DateField{Name: "day_resets", Help: "When the current day window ends."},
			&core.AutodateField{Name: "created", OnCreate: true},
			&core.AutodateField{Name: "updated", OnCreate: true, OnUpdate: true},
		)
		keys.AddIndex("idx_api_keys_key_hash", true, "`key_hash`", "")
		return app.Save(keys)
	}, func(app core.App) error {
		keys, err := app.FindCollectionByNameOrId("api_keys")
		if err != nil {
			return err
		}
		return app.Delete(keys)
	})
}
