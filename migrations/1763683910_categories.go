package migrations

import (
	"slices"

	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
	"github.com/pocketbase/pocketbase/tools/types"
)

// categoryActions are the audit actions on categories.
var categoryActions = []string{"category.created", "category.renamed", "category.deleted"}

// The pets' categoryId help as it was before this migration
// (1763683500_dashboard.go).
const categoryIDHelpBefore = "The animal's category: a whole number from 1 to 9007199254740991 (2^53-1)."

// Categories give the pets' categoryId numbers names. A category's number
// is the categoryId pets carry; staff choose it, or the service assigns the
// one after the highest in use. The migration names nothing: the numbers pets already use
// stay valid, unnamed (the view below shows them as "unnamed category N").
// Only superusers read and write categories (API keys list them through
// /v1). The view pets_with_categories is the pets with their category's
// name, for the dashboard. The audit trail records categories' changes: a
// record is about a key, an endpoint or a category (its number, as text).
func init() {
	m.Register(func(app core.App) error {
		categories := core.NewBaseCollection("categories")
		categories.Fields.Add(
			&core.NumberField{
				Name:    "number",
				OnlyInt: true,
				Min:     types.Pointer(1.0),
				Max:     types.Pointer(float64(maxSafeInteger)),
				Help:    "The categoryId that pets carry and clients send. Empty: the next number no category or pet uses. It cannot change once saved.",
			},
			&core.TextField{Name: "name", Required: true, Min: 1, Max: 100, Presentable: true,
				Help: "Unique, whatever the letter case; surrounding spaces are trimmed."},
			&core.TextField{Name: "description", Max: 1000},
			&core.AutodateField{Name: "created", OnCreate: true},
			&core.AutodateField{Name: "updated", OnCreate: true, OnUpdate: true},
		)
		categories.AddIndex("idx_categories_number", true, "`number`", "")
		categories.AddIndex("idx_categories_name", true, "`name` COLLATE NOCASE", "")
		if err := app.Save(categories); err != nil {
			return err
		}

		pets, err := app.FindCollectionByNameOrId("pets")
		if err != nil {
			return err
		}
		categoryID, _ := pets.Fields.GetByName("categoryId").(*core.NumberField)
		categoryID.Help = "The number of the animal's category, a whole number from 1 to 9007199254740991: categories are named in the categories collection and on the staff page (/staff/); a number no category has is allowed (an unnamed category)."
		if err := app.Save(pets); err != nil {
			return err
		}

		view := core.NewViewCollection("pets_with_categories")
		view.ViewQuery = `SELECT p.id, p.name, p.categoryId,
			CAST(COALESCE(c.name, 'unnamed category ' || CAST(p.categoryId AS INTEGER)) AS TEXT) AS category,
			p.status, p.created, p.updated
			FROM pets p LEFT JOIN categories c ON c.number = p.categoryId`
		if err := app.Save(view); err != nil {
			return err
		}

		log, err := app.FindCollectionByNameOrId("audit_log")
		if err != nil {
			return err
		}
		action, _ := log.Fields.GetByName("action").(*core.SelectField)
		for _, a := range categoryActions {
			if !slices.Contains(action.Values, a) {
				action.Values = append(action.Values, a)
			}
		}
		log.Fields.Add(&core.TextField{Name: "category", Max: 16,
			Help: "The category's number, for a category's change; kept after the category is deleted."})
		log.AddIndex("idx_audit_log_category_created", false, "`category`, `created`", "")
		return app.Save(log)
	}, func(app core.App) error {
		if _, err := app.DB().NewQuery("DELETE FROM audit_log WHERE category != ''").Execute(); err != nil {
			return err
		}
		log, err := app.FindCollectionByNameOrId("audit_log")
		if err != nil {
			return err
		}
		action, _ := log.Fields.GetByName("action").(*core.SelectField)
		action.Values = slices.DeleteFunc(action.Values, func(a string) bool { return slices.Contains(categoryActions, a) })
		log.Fields.RemoveByName("category")
		log.RemoveIndex("idx_audit_log_category_created")
		if err := app.Save(log); err != nil {
			return err
		}
		for _, name := range []string{"pets_with_categories", "categories"} {
			c, err := app.FindCollectionByNameOrId(name)
			if err != nil {
				return err
			}
			if err := app.Delete(c); err != nil {
				return err
			}
		}
		pets, err := app.FindCollectionByNameOrId("pets")
		if err != nil {
			return err
		}
		categoryID, _ := pets.Fields.GetByName("categoryId").(*core.NumberField)
		categoryID.Help = categoryIDHelpBefore
		return app.Save(pets)
	})
}
