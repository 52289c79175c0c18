package migrations

import (
	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
)

// An audit record of a change made over HTTP names the request that made it
// (its Request-Id), which the client, the proxy and the service's log
// lines name too.
func init() {
	m.Register(func(app core.App) error {
		log, err := app.FindCollectionByNameOrId("audit_log")
		if err != nil {
			return err
		}
		log.Fields.AddAt(len(log.Fields)-1, &core.TextField{Name: "request_id", Max: 128,
			Help: "The Request-Id of the request that made the change, when it came over HTTP."})
		return app.Save(log)
	}, func(app core.App) error {
		log, err := app.FindCollectionByNameOrId("audit_log")
		if err != nil {
			return err
		}
		log.Fields.RemoveByName("request_id")
		return app.Save(log)
	})
}
