package categories

import (
	"encoding/json"
	"strconv"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/audit"
	"petstore/internal/fixedcollections"
)

// Fixed is the categories collection as fixed: its fields and rules are
// what the categories' audit and events rely on, and a rename would escape
// the record hooks below, bound by its name.
func Fixed() fixedcollections.Collection {
	return fixedcollections.Collection{Name: Collection, Refusal: "the categories collection cannot be renamed, changed, emptied or deleted: " +
		"its fields and rules are the service's. Add, rename and delete categories on the staff page (/staff/), " +
		"with 'petstore categories', or as its records in the dashboard"}
}

// Bind binds the categories' record hooks to app: the rules of every save
// and deletion, whatever makes it (the dashboard, the records API, the
// categories command, the staff page), and the audit records of the changes
// made through the records API, with the superuser who made them (Create,
// Rename and Delete write their own).
func Bind(app core.App) {
	app.OnRecordCreate(Collection).BindFunc(func(e *core.RecordEvent) error {
		e.Record.Set(NameField, Name(e.Record.GetString(NameField)))
		if e.Record.GetFloat(NumberField) == 0 {
			n, err := nextNumber(e.App)
			if err != nil {
				return err
			}
			e.Record.Set(NumberField, n)
		}
		return e.Next()
	})
	app.OnRecordUpdate(Collection).BindFunc(func(e *core.RecordEvent) error {
		e.Record.Set(NameField, Name(e.Record.GetString(NameField)))
		return e.Next()
	})
	app.OnRecordValidate(Collection).BindFunc(func(e *core.RecordEvent) error {
		if err := check(e.App, &Record{e.Record}); err != nil {
			return err
		}
		return e.Next()
	})
	app.OnRecordDelete(Collection).BindFunc(func(e *core.RecordEvent) error {
		c := &Record{e.Record}
		n, err := petsCarrying(e.App, c.Number())
		if err != nil {
			return err
		}
		if n > 0 {
			return inUse(c, n)
		}
		return e.Next()
	})

	// The records API: each change and its audit record in one transaction.
	app.OnRecordCreateRequest(Collection).BindFunc(func(e *core.RecordRequestEvent) error {
		by := audit.ActorOf(e.RequestEvent)
		return e.App.RunInTransaction(func(tx core.App) error {
			e.App = tx
			if err := e.Next(); err != nil {
				return err
			}
			c := &Record{e.Record}
			return writeAudit(tx, audit.CategoryCreated, c.Number(), "", c.Name(), by)
		})
	})
	app.OnRecordUpdateRequest(Collection).BindFunc(func(e *core.RecordRequestEvent) error {
		by, old := audit.ActorOf(e.RequestEvent), e.Record.Original().GetString(NameField)
		return e.App.RunInTransaction(func(tx core.App) error {
			e.App = tx
			if err := e.Next(); err != nil {
				return err
			}
			return writeRename(tx, &Record{e.Record}, old, by)
		})
	})
	app.OnRecordDeleteRequest(Collection).BindFunc(func(e *core.RecordRequestEvent) error {
		by, c := audit.ActorOf(e.RequestEvent), &Record{e.Record}
		return e.App.RunInTransaction(func(tx core.App) error {
			e.App = tx
			if err := e.Next(); err != nil {
				return err
			}
			return writeAudit(tx, audit.CategoryDeleted, c.Number(), c.Name(), "", by)
		})
	})
}

// Event is the data of a category's webhook event, as its audit record
// tells it.
type Event struct {
	ID           int64  `json:"id"`
	Name         string `json:"name"`
	PreviousName string `json:"previousName,omitempty"` // category.renamed's
}

// EventOf is the event data of r, an audit record of a category's change.
func EventOf(r *core.Record) (Event, error) {
	var ev Event
	var details struct {
		Name struct{ Old, New string } `json:"name"`
	}
	if err := json.Unmarshal([]byte(r.GetString(audit.DetailsField)), &details); err != nil {
		return ev, err
	}
	id, err := strconv.ParseInt(r.GetString(audit.CategoryField), 10, 64)
	if err != nil {
		return ev, err
	}
	ev.ID, ev.Name = id, details.Name.New
	switch audit.Action(r.GetString(audit.ActionField)) {
	case audit.CategoryRenamed:
		ev.PreviousName = details.Name.Old
	case audit.CategoryDeleted:
		ev.Name = details.Name.Old
	}
	return ev, nil
}
