package customers

import (
	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/internal/fixedcollections"
)

// Fixed is the customers collection as fixed: its fields and rules are what
// the keys' plans and the customers' audit rely on, and a rename would
// escape the record hooks below.
func Fixed() fixedcollections.Collection {
	return fixedcollections.Collection{Name: Collection, Refusal: "the customers collection cannot be renamed, changed, emptied or deleted: " +
		"its fields and rules are the service's. Add and change customers on the staff page (/staff/), " +
		"with 'petstore customers', or as its records in the dashboard"}
}

// Bind binds the customers' record hooks to app: the rules of every save
// and deletion of a customer, and of every key's save, whatever makes it
// (the dashboard, the records API, the customers and keys commands, the
// staff page); and, for the records API, the audit records of the changes
// with the superuser who made them, a plan's change moving the customer's
// keys in the same transaction (Create, Change and Assign do their own).
func Bind(app core.App) {
	customers, keys := fixedcollections.Tags(Collection), fixedcollections.Tags(apikeys.Collection)
	trim := func(e *core.RecordEvent) error {
		e.Record.Set(NameField, Name(e.Record.GetString(NameField)))
		return e.Next()
	}
	app.OnRecordCreate(customers...).BindFunc(trim)
	app.OnRecordUpdate(customers...).BindFunc(trim)
	app.OnRecordValidate(customers...).BindFunc(func(e *core.RecordEvent) error {
		if err := check(e.App, &Record{e.Record}); err != nil {
			return err
		}
		return e.Next()
	})
	app.OnRecordDelete(customers...).BindFunc(func(e *core.RecordEvent) error {
		c := &Record{e.Record}
		n, err := keysOf(e.App, c.Id)
		if err != nil {
			return err
		}
		if n > 0 {
			return hasKeys(c, n)
		}
		return e.Next()
	})
	app.OnRecordValidate(keys...).BindFunc(func(e *core.RecordEvent) error {
		if err := checkKey(e.App, &apikeys.APIKey{Record: e.Record}); err != nil {
			return err
		}
		return e.Next()
	})
	// A key given to a customer in the dashboard moves to its plan, as
	// Assign does; a plan chosen there for a customer's key is refused
	// (checkKey).
	app.OnRecordUpdateRequest(keys...).BindFunc(func(e *core.RecordRequestEvent) error {
		k := &apikeys.APIKey{Record: e.Record}
		stored := k.Stored()
		if k.CustomerID() != "" && k.CustomerID() != stored.CustomerID() && k.PlanID() == stored.PlanID() {
			c, err := Find(e.App, k.CustomerID())
			if err != nil {
				return err
			}
			k.SetPlanID(c.PlanID())
		}
		return e.Next()
	})

	// The records API: each change and its audit record in one transaction.
	app.OnRecordCreateRequest(customers...).BindFunc(func(e *core.RecordRequestEvent) error {
		by := audit.ActorOf(e.RequestEvent)
		return e.App.RunInTransaction(func(tx core.App) error {
			e.App = tx
			if err := e.Next(); err != nil {
				return err
			}
			return writeWhole(tx, &Record{e.Record}, audit.CustomerCreated, by)
		})
	})
	app.OnRecordUpdateRequest(customers...).BindFunc(func(e *core.RecordRequestEvent) error {
		by, before := audit.ActorOf(e.RequestEvent), &Record{e.Record.Original()}
		return e.App.RunInTransaction(func(tx core.App) error {
			e.App = tx
			if err := e.Next(); err != nil {
				return err
			}
			return Changed(tx, before, &Record{e.Record}, by)
		})
	})
	app.OnRecordDeleteRequest(customers...).BindFunc(func(e *core.RecordRequestEvent) error {
		by, c := audit.ActorOf(e.RequestEvent), &Record{e.Record}
		return e.App.RunInTransaction(func(tx core.App) error {
			e.App = tx
			if err := e.Next(); err != nil {
				return err
			}
			return writeWhole(tx, c, audit.CustomerDeleted, by)
		})
	})
}
