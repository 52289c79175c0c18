package migrations

import (
	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
)

// A webhook event keeps the W3C traceparent of the request that made it,
// so that its deliveries, each a trace of its own, link to that request's
// span. Events written before, or with tracing off, keep it empty: their
// deliveries link to nothing.
func init() {
	m.Register(func(app core.App) error {
		events, err := app.FindCollectionByNameOrId("webhook_events")
		if err != nil {
			return err
		}
		events.Fields.Add(&core.TextField{Name: "traceparent", Max: 55,
			Help: "The W3C traceparent of the request that made the event, which its deliveries' spans link to; empty with tracing off."})
		return app.Save(events)
	}, func(app core.App) error {
		events, err := app.FindCollectionByNameOrId("webhook_events")
		if err != nil {
			return err
		}
		events.Fields.RemoveByName("traceparent")
		return app.Save(events)
	})
}
