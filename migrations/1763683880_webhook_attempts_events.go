package migrations

import (
	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
	"github.com/pocketbase/pocketbase/tools/types"
)

// A record of webhook_attempts is one failed attempt, or the deliveries of a
// batch that the endpoint took one after the other: events counts them, and
// the record's event, webhook_id, status and answer are the last one's.
// Every record before is one attempt.
func init() {
	m.Register(func(app core.App) error {
		attempts, err := app.FindCollectionByNameOrId("webhook_attempts")
		if err != nil {
			return err
		}
		position := len(attempts.Fields)
		for i, f := range attempts.Fields {
			if f.GetName() == "webhook_id" {
				position = i + 1
			}
		}
		attempts.Fields.AddAt(position, &core.NumberField{
			Name: "events", OnlyInt: true, Min: types.Pointer(1.0),
			Help: "The events these attempts delivered in a row, the record's event last; 1: one attempt.",
		})
		if err := app.Save(attempts); err != nil {
			return err
		}
		_, err = app.DB().NewQuery(`UPDATE {{webhook_attempts}} SET [[events]] = 1`).Execute()
		return err
	}, func(app core.App) error {
		attempts, err := app.FindCollectionByNameOrId("webhook_attempts")
		if err != nil {
			return err
		}
		attempts.Fields.RemoveByName("events")
		return app.Save(attempts)
	})
}
