package migrations

import (
	"slices"

	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
)

// webhookActions are the audit actions on webhook endpoints.
var webhookActions = []string{
	"webhook.created", "webhook.changed", "webhook.deleted", "webhook.secret_rolled", "webhook.paused",
	"webhook.event_resent", "webhook.test_sent",
}

// The audit trail records the changes to webhook endpoints too: a record is
// about a key or about an endpoint. `webhook` is the endpoint's id as plain
// text, no relation, so that the endpoint's records outlive it (a relation
// with cascade delete would erase them with it, one without would block its
// deletion).
func init() {
	m.Register(func(app core.App) error {
		log, err := app.FindCollectionByNameOrId("audit_log")
		if err != nil {
			return err
		}
		action, _ := log.Fields.GetByName("action").(*core.SelectField)
		for _, a := range webhookActions {
			if !slices.Contains(action.Values, a) {
				action.Values = append(action.Values, a)
			}
		}
		key, _ := log.Fields.GetByName("key").(*core.TextField)
		key.Required = false
		key.Help = "The api_keys record id, for a key's change."
		log.Fields.Add(&core.TextField{Name: "webhook", Max: 15,
			Help: "The webhook_endpoints record id, for an endpoint's change; kept after the endpoint is deleted."})
		log.AddIndex("idx_audit_log_webhook_created", false, "`webhook`, `created`", "")
		return app.Save(log)
	}, func(app core.App) error {
		if _, err := app.DB().NewQuery("DELETE FROM audit_log WHERE webhook != ''").Execute(); err != nil {
			return err
		}
		log, err := app.FindCollectionByNameOrId("audit_log")
		if err != nil {
			return err
		}
		action, _ := log.Fields.GetByName("action").(*core.SelectField)
		action.Values = slices.DeleteFunc(action.Values, func(a string) bool { return slices.Contains(webhookActions, a) })
		key, _ := log.Fields.GetByName("key").(*core.TextField)
		key.Required = true
		key.Help = "The api_keys record id."
		log.Fields.RemoveByName("webhook")
		log.RemoveIndex("idx_audit_log_webhook_created")
		return app.Save(log)
	})
}
