package migrations

import (
	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
	"github.com/pocketbase/pocketbase/tools/types"
)

// The webhooks' collections (package internal/webhooks): the endpoints staff
// subscribe, the outbox of events (one record per event and endpoint,
// written in the transaction of the change it tells of) and the history of
// delivery attempts. Superusers read them; the staff API writes them.
func init() {
	m.Register(func(app core.App) error {
		endpoints := core.NewBaseCollection("webhook_endpoints")
		endpoints.Fields.Add(
			&core.TextField{Name: "url", Required: true, Max: 2048, Presentable: true},
			&core.JSONField{Name: "events", MaxSize: 1024, Help: "The event types sent to the endpoint."},
			&core.TextField{Name: "description", Max: 200},
			// Hidden: no API answer, dashboard view or log shows the secrets.
			&core.TextField{Name: "secret", Required: true, Hidden: true, Max: 100},
			&core.TextField{Name: "previous_secret", Hidden: true, Max: 100},
			&core.DateField{Name: "previous_until", Help: "Until then, deliveries are signed with the previous secret too."},
			&core.BoolField{Name: "paused"},
			&core.TextField{Name: "paused_reason", Max: 500},
			&core.DateField{Name: "failing_since", Help: "The first failed attempt since the last delivery."},
			&core.AutodateField{Name: "created", OnCreate: true},
			&core.AutodateField{Name: "updated", OnCreate: true, OnUpdate: true},
		)
		if err := app.Save(endpoints); err != nil {
			return err
		}

		events := core.NewBaseCollection("webhook_events")
		events.Fields.Add(
			&core.TextField{Name: "webhook_id", Required: true, Max: 64, Presentable: true,
				Help: "The webhook-id header: the same on every attempt, and for every endpoint, of one event."},
			&core.RelationField{Name: "endpoint", Required: true, MaxSelect: 1, CollectionId: endpoints.Id, CascadeDelete: true},
			&core.TextField{Name: "type", Required: true, Max: 64},
			&core.TextField{Name: "body", Required: true, Max: 65536, Help: "The JSON body, as signed."},
			&core.SelectField{Name: "status", Required: true, MaxSelect: 1, Values: []string{"pending", "delivered", "failed"}},
			&core.NumberField{Name: "attempts", OnlyInt: true, Min: types.Pointer(0.0)},
			&core.DateField{Name: "next_attempt"},
			&core.TextField{Name: "lease_owner", Max: 64, Help: "The instance sending the event."},
			&core.DateField{Name: "lease_until"},
			&core.TextField{Name: "dedupe", Max: 200, Help: "Events of one dedupe text are written once per endpoint."},
			&core.AutodateField{Name: "created", OnCreate: true},
			&core.AutodateField{Name: "updated", OnCreate: true, OnUpdate: true},
		)
		// The one index every event's write pays for beside its id: each
		// endpoint's pending events in order (rowid), read by the deliverer
		// and counted by the outbox gauge.
		events.AddIndex("idx_webhook_events_endpoint_status", false, "`endpoint`, `status`", "")
		events.AddIndex("idx_webhook_events_dedupe", true, "`endpoint`, `dedupe`", "`dedupe` != ''")
		if err := app.Save(events); err != nil {
			return err
		}

		attempts := core.NewBaseCollection("webhook_attempts")
		attempts.Fields.Add(
			&core.RelationField{Name: "event", Required: true, MaxSelect: 1, CollectionId: events.Id, CascadeDelete: true},
			&core.TextField{Name: "endpoint", Required: true, Max: 15},
			&core.TextField{Name: "webhook_id", Max: 64, Presentable: true},
			&core.NumberField{Name: "status", OnlyInt: true, Help: "The HTTP status answered; 0: no answer."},
			&core.TextField{Name: "error", Max: 500},
			&core.NumberField{Name: "latency_ms", OnlyInt: true},
			&core.TextField{Name: "response", Max: 1024, Help: "The first bytes of the answer."},
			&core.AutodateField{Name: "created", OnCreate: true},
		)
		attempts.AddIndex("idx_webhook_attempts_endpoint_created", false, "`endpoint`, `created`", "")
		attempts.AddIndex("idx_webhook_attempts_created", false, "`created`", "")
		attempts.AddIndex("idx_webhook_attempts_event", false, "`event`", "")
		return app.Save(attempts)
	}, func(app core.App) error {
		for _, name := range []string{"webhook_attempts", "webhook_events", "webhook_endpoints"} {
			c, err := app.FindCollectionByNameOrId(name)
			if err != nil {
				return err
			}
			if err := app.Delete(c); err != nil {
				return err
			}
		}
		return nil
	})
}
