package migrations

import (
	"slices"

	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
)

// customerActions are the audit actions on customers, and a key's move to
// or from one.
var customerActions = []string{"customer.created", "customer.changed", "customer.deleted", "key.customer_changed"}

// Customers own keys: a customer (a name, unique whatever the letter case,
// a contact e-mail, notes, a plan) and the keys that belong to it, each to
// at most one. A key's customer is optional, so every key there is keeps
// working as it is: without a customer, on its own plan. A key with a
// customer is on the customer's plan (the customers package keeps the two
// equal). Only superusers read and write customers. The audit trail
// records customers' changes: a record is about a key, an endpoint, a
// category or a customer (its record id, kept after its deletion).
func init() {
	m.Register(func(app core.App) error {
		plans, err := app.FindCollectionByNameOrId("plans")
		if err != nil {
			return err
		}
		customers := core.NewBaseCollection("customers")
		customers.Fields.Add(
			&core.TextField{Name: "name", Required: true, Min: 1, Max: 100, Presentable: true,
				Help: "Unique, whatever the letter case; surrounding spaces are trimmed."},
			&core.EmailField{Name: "contact", Help: "Who to write to about the customer's use and plan."},
			&core.TextField{Name: "notes", Max: 2000},
			&core.RelationField{Name: "plan", Required: true, MaxSelect: 1, CollectionId: plans.Id,
				Help: "The plan of every key of the customer: changing it changes their quotas at once (a key's own quotas, where set, still win)."},
			&core.AutodateField{Name: "created", OnCreate: true},
			&core.AutodateField{Name: "updated", OnCreate: true, OnUpdate: true},
		)
		customers.AddIndex("idx_customers_name", true, "`name` COLLATE NOCASE", "")
		if err := app.Save(customers); err != nil {
			return err
		}

		keys, err := app.FindCollectionByNameOrId("api_keys")
		if err != nil {
			return err
		}
		keys.Fields.Add(&core.RelationField{Name: "customer", MaxSelect: 1, CollectionId: customers.Id,
			Help: "The customer the key belongs to, if any: the key is then on the customer's plan."})
		keys.AddIndex("idx_api_keys_customer", false, "`customer`", "")
		if err := app.Save(keys); err != nil {
			return err
		}

		log, err := app.FindCollectionByNameOrId("audit_log")
		if err != nil {
			return err
		}
		action, _ := log.Fields.GetByName("action").(*core.SelectField)
		for _, a := range customerActions {
			if !slices.Contains(action.Values, a) {
				action.Values = append(action.Values, a)
			}
		}
		log.Fields.Add(&core.TextField{Name: "customer", Max: 15,
			Help: "The customer's record id, for a customer's change; kept after the customer is deleted."})
		log.AddIndex("idx_audit_log_customer_created", false, "`customer`, `created`", "")
		return app.Save(log)
	}, func(app core.App) error {
		if _, err := app.DB().NewQuery("DELETE FROM audit_log WHERE customer != '' OR action = 'key.customer_changed'").Execute(); err != nil {
			return err
		}
		log, err := app.FindCollectionByNameOrId("audit_log")
		if err != nil {
			return err
		}
		action, _ := log.Fields.GetByName("action").(*core.SelectField)
		action.Values = slices.DeleteFunc(action.Values, func(a string) bool { return slices.Contains(customerActions, a) })
		log.Fields.RemoveByName("customer")
		log.RemoveIndex("idx_audit_log_customer_created")
		if err := app.Save(log); err != nil {
			return err
		}
		keys, err := app.FindCollectionByNameOrId("api_keys")
		if err != nil {
			return err
		}
		keys.Fields.RemoveByName("customer")
		keys.RemoveIndex("idx_api_keys_customer")
		if err := app.Save(keys); err != nil {
			return err
		}
		customers, err := app.FindCollectionByNameOrId("customers")
		if err != nil {
			return err
		}
		return app.Delete(customers)
	})
}
