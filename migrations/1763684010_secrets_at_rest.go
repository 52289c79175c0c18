package migrations

import (
	"slices"

	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
)

// secretsActions are the audit actions on the secrets at rest: the service
// sealing plaintext secrets at a start with a key, and a key's rotation.
var secretsActions = []string{"webhook.secrets_sealed", "secrets.key_rotated"}

// webhookSecretFields hold an endpoint's secrets, sealed: "enc1:" and the
// base64 of a nonce, the secret and a tag (109 characters for a secret of
// 50), over the 100 they were sized for in plaintext.
var webhookSecretFields = []string{"secret", "previous_secret"}

// Webhook secrets are kept encrypted (internal/atrest): their fields hold
// the longer sealed form, and the audit trail records the sealing and the
// key's rotation.
func init() {
	m.Register(func(app core.App) error {
		if err := setSecretFieldsMax(app, 200); err != nil {
			return err
		}
		log, err := app.FindCollectionByNameOrId("audit_log")
		if err != nil {
			return err
		}
		action, _ := log.Fields.GetByName("action").(*core.SelectField)
		for _, a := range secretsActions {
			if !slices.Contains(action.Values, a) {
				action.Values = append(action.Values, a)
			}
		}
		return app.Save(log)
	}, func(app core.App) error {
		if _, err := app.DB().NewQuery("DELETE FROM audit_log WHERE action IN ('webhook.secrets_sealed', 'secrets.key_rotated')").Execute(); err != nil {
			return err
		}
		log, err := app.FindCollectionByNameOrId("audit_log")
		if err != nil {
			return err
		}
		action, _ := log.Fields.GetByName("action").(*core.SelectField)
		action.Values = slices.DeleteFunc(action.Values, func(a string) bool { return slices.Contains(secretsActions, a) })
		if err := app.Save(log); err != nil {
			return err
		}
		return setSecretFieldsMax(app, 100)
	})
}

// setSecretFieldsMax bounds the webhook secrets' fields to max characters.
func setSecretFieldsMax(app core.App, max int) error {
	endpoints, err := app.FindCollectionByNameOrId("webhook_endpoints")
	if err != nil {
		return err
	}
	for _, name := range webhookSecretFields {
		field, _ := endpoints.Fields.GetByName(name).(*core.TextField)
		field.Max = max
	}
	return app.Save(endpoints)
}
