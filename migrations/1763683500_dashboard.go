package migrations

import (
	"fmt"

	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
)

// The dashboard (/_/) stops being a trap for store staff: every api_keys
// field says what it holds and what 0 or empty means, the columns staff look
// at come first, pets' categoryId says what a valid value is, and
// PocketBase's default users collection, which petstore does not use, goes.
func init() {
	m.Register(func(app core.App) error {
		if err := dropUnusedUsers(app); err != nil {
			return err
		}
		if err := describePets(app); err != nil {
			return err
		}
		return describeAPIKeys(app)
	}, nil)
}

const writtenByService = " Written by the service; edits here are ignored."

// apiKeyFields is api_keys' dashboard column order with each field's help.
var apiKeyFields = []struct{ name, help string }{
	{"id", ""},
	{"name", "Who uses the key. New keys are issued on the staff page, /staff/, or with 'petstore keys create'."},
	{"plan", "The key's plan: its quotas unless the key has its own (per_minute, per_day)."},
	{"prefix", "The first characters of the key, to recognise it." + writtenByService},
	{"revoked", "True means REVOKED: the key is refused for good. To revoke, tick it here, or use the staff page or 'petstore keys revoke'."},
	{"banned_until", "Set by the rate limiter when the key keeps sending while limited. Lift a ban on the staff page (/staff/) or with 'petstore keys unban ID'." + writtenByService},
	{"day_used", "Requests in the key's current day window (24 hours from its first request), saved every few seconds." + writtenByService},
	{"last_used", "The key's last request, to the minute." + writtenByService},
	{"expires", "Empty: never expires. From this time on the key is refused."},
	{"per_minute", "The key's own per-minute quota. 0 or empty: the plan's."},
	{"per_day", "The key's own per-day quota. 0 or empty: the plan's."},
	{"previous_prefix", "After a roll, the first characters of the old secret." + writtenByService},
	{"previous_until", "After a roll, until when the old secret still works (staff page or 'petstore keys roll ID --grace 24h')." + writtenByService},
	{"day_resets", "When the current day window ends." + writtenByService},
	{"key_hash", "The SHA-256 of the key; the key itself is never stored." + writtenByService},
	{"previous_hash", "After a roll, the SHA-256 of the old secret." + writtenByService},
	{"created", ""},
	{"updated", ""},
}

func describeAPIKeys(app core.App) error {
	keys, err := app.FindCollectionByNameOrId("api_keys")
	if err != nil {
		return err
	}
	ordered := make([]core.Field, 0, len(keys.Fields))
	for _, f := range apiKeyFields {
		field := keys.Fields.GetByName(f.name)
		if field == nil {
			return fmt.Errorf("api_keys has no field %s", f.name)
		}
		if f.help != "" {
			setHelp(field, f.help)
		}
		ordered = append(ordered, field)
	}
	if len(ordered) != len(keys.Fields) {
		return fmt.Errorf("api_keys has %d fields, the dashboard order names %d", len(keys.Fields), len(ordered))
	}
	keys.Fields = core.NewFieldsList(ordered...)
	return app.Save(keys)
}

func describePets(app core.App) error {
	pets, err := app.FindCollectionByNameOrId("pets")
	if err != nil {
		return err
	}
	setHelp(pets.Fields.GetByName("categoryId"),
		"The animal's category: a whole number from 1 to 9007199254740991 (2^53-1).")
	setHelp(pets.Fields.GetByName("status"), "Empty: available.")
	return app.Save(pets)
}

func setHelp(f core.Field, help string) {
	switch f := f.(type) {
	case *core.TextField:
		f.Help = help
	case *core.NumberField:
		f.Help = help
	case *core.BoolField:
		f.Help = help
	case *core.DateField:
		f.Help = help
	case *core.RelationField:
		f.Help = help
	case *core.SelectField:
		f.Help = help
	}
}

// dropUnusedUsers deletes PocketBase's default users collection, unless
// someone has put records in it.
func dropUnusedUsers(app core.App) error {
	users, err := app.FindCollectionByNameOrId("users")
	if err != nil {
		return nil // already gone
	}
	if n, err := app.CountRecords(users); err != nil || n > 0 {
		return err
	}
	return app.Delete(users)
}
