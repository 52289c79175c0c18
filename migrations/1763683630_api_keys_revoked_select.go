package migrations

import (
	"fmt"

	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
)

// A revoked key reads as revoked in the dashboard: `revoked` becomes a
// select field whose one value is "revoked" (empty: not revoked) instead of
// a bool that PocketBase draws as a green "True". Its values are carried
// over. The help of the fields staff edit there says the rules they keep:
// revocation is final, the expiry changes on the staff page or with the
// `keys` command only, and names and quotas have bounds.
func init() {
	m.Register(func(app core.App) error {
		err := replaceField(app, "api_keys", "revoked", &core.SelectField{Values: []string{"revoked"}, MaxSelect: 1},
			"CASE WHEN revoked THEN 'revoked' ELSE '' END")
		if err != nil {
			return err
		}
		return describeKeyRules(app)
	}, func(app core.App) error {
		return replaceField(app, "api_keys", "revoked", &core.BoolField{}, "revoked <> ''")
	})
}

func describeKeyRules(app core.App) error {
	keys, err := app.FindCollectionByNameOrId("api_keys")
	if err != nil {
		return err
	}
	for name, help := range map[string]string{
		"name": "Who uses the key: required, at most 100 characters, without control or text-direction characters. " +
			"New keys are issued on the staff page, /staff/, or with 'petstore keys create'.",
		"revoked": "Choose 'revoked' to refuse the key for good. Revocation is final: a save that clears it is refused. " +
			"Also on the staff page or with 'petstore keys revoke ID'.",
		"expires": "Empty: never expires. From this time on the key is refused. Change it on the staff page (/staff/) or with " +
			"'petstore keys expire ID --at TIME|--never'; edits here are ignored, so that a form opened earlier cannot turn it back.",
		"per_minute": "The key's own per-minute quota: at most 1000000000, and never above the per-day quota (its own or the plan's). 0 or empty: the plan's.",
		"per_day":    "The key's own per-day quota: at most 1000000000000, and never below the per-minute quota (its own or the plan's). 0 or empty: the plan's.",
	} {
		field := keys.Fields.GetByName(name)
		if field == nil {
			return fmt.Errorf("api_keys has no field %s", name)
		}
		setHelp(field, help)
	}
	return app.Save(keys)
}

// replaceField gives collection's field name the type of replacement, in
// the same place, with the same help, its values carried over by the SQL
// expression convert (over the old column): PocketBase does not change a
// field's type, so the new field is added beside the old one, filled, and
// takes the old one's name once that is removed.
func replaceField(app core.App, collectionName, name string, replacement core.Field, convert string) error {
	collection, err := app.FindCollectionByNameOrId(collectionName)
	if err != nil {
		return err
	}
	old := collection.Fields.GetByName(name)
	if old == nil {
		return fmt.Errorf("%s has no field %s", collectionName, name)
	}
	position := 0
	for i, f := range collection.Fields {
		if f.GetId() == old.GetId() {
			position = i
		}
	}
	temporary := name + "_replacement"
	replacement.SetName(temporary)
	setHelp(replacement, helpOf(old))
	collection.Fields.AddAt(position+1, replacement)
	if err := app.Save(collection); err != nil {
		return err
	}
	_, err = app.DB().NewQuery(fmt.Sprintf("UPDATE {{%s}} SET [[%s]] = %s", collectionName, temporary, convert)).Execute()
	if err != nil {
		return err
	}
	collection.Fields.RemoveById(old.GetId())
	collection.Fields.GetByName(temporary).SetName(name)
	return app.Save(collection)
}

// helpOf is a field's help, for the field types setHelp sets.
func helpOf(f core.Field) string {
	switch f := f.(type) {
	case *core.TextField:
		return f.Help
	case *core.NumberField:
		return f.Help
	case *core.BoolField:
		return f.Help
	case *core.DateField:
		return f.Help
	case *core.RelationField:
		return f.Help
	case *core.SelectField:
		return f.Help
	}
	return ""
}
