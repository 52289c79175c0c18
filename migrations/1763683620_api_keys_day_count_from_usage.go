package migrations

import (
	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
	"github.com/pocketbase/pocketbase/tools/types"
)

// A key's day quota counts the UTC day, the same day as its usage history
// (api_key_usage), whose served requests are the day's count: the copy of
// it on the key, day_used and day_resets, goes, and the history says so.
func init() {
	m.Register(func(app core.App) error {
		keys, err := app.FindCollectionByNameOrId("api_keys")
		if err != nil {
			return err
		}
		keys.Fields.RemoveByName("day_used")
		keys.Fields.RemoveByName("day_resets")
		if err := app.Save(keys); err != nil {
			return err
		}
		usage, err := app.FindCollectionByNameOrId("api_key_usage")
		if err != nil {
			return err
		}
		setHelp(usage.Fields.GetByName("limited"), "Of those, the requests refused with 429 (rate limit or ban). "+
			"Refused requests count in no window: requests minus limited is what the key's day quota counted that day.")
		return app.Save(usage)
	}, func(app core.App) error {
		keys, err := app.FindCollectionByNameOrId("api_keys")
		if err != nil {
			return err
		}
		keys.Fields.Add(
			&core.NumberField{Name: "day_used", OnlyInt: true, Min: types.Pointer(0.0),
				Help: "Requests counted in the current day window (updated every few seconds)."},
			&core.DateField{Name: "day_resets", Help: "When the current day window ends."},
		)
		return app.Save(keys)
	})
}
