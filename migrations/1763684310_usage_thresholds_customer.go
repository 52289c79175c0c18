package migrations

import (
	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
)

// A customer whose plan counts per customer has one day window for its keys
// (plans.counted), and a crossing of it is told of once per customer, UTC
// day and threshold: its row in usage_thresholds names the customer beside
// the key whose request crossed, unique per customer, day and threshold.
// Rows of keys counted per key name no customer, unique per key as before.
func init() {
	m.Register(func(app core.App) error {
		c, err := app.FindCollectionByNameOrId("usage_thresholds")
		if err != nil {
			return err
		}
		c.Fields.Add(&core.TextField{Name: "customer", Max: 15,
			Help: "The customer whose shared day window was crossed (its plan counts per customer); empty: the key's own window."})
		c.AddIndex("idx_usage_thresholds_customer_day_threshold", true, "`customer`, `day`, `threshold`", "`customer` != ''")
		return app.Save(c)
	}, func(app core.App) error {
		c, err := app.FindCollectionByNameOrId("usage_thresholds")
		if err != nil {
			return err
		}
		c.RemoveIndex("idx_usage_thresholds_customer_day_threshold")
		c.Fields.RemoveByName("customer")
		return app.Save(c)
	})
}
