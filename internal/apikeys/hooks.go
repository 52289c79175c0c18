package apikeys

import (
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/types"

	"petstore/internal/audit"
	"petstore/internal/fixedcollections"
)

// errCreateKeyInDashboard answers the dashboard's "New record" on api_keys:
// only a key's hash is stored, so a key made there would be one nobody has.
const errCreateKeyInDashboard = "API keys are issued on the staff page, /staff/, or on the command line with " +
	"'petstore keys create', which show the new key once. The dashboard cannot: only a key's hash is stored."

// errDeleteKey answers a deletion of a key through the records API (the
// dashboard, the batch API): a key is revoked, never deleted, so that its
// history stays readable beside the trail.
const errDeleteKey = "API keys are not deleted: revoke the key on the staff page (/staff/) or with 'petstore keys revoke ID'. " +
	"A revoked key stays, with its history in the audit trail."

// Fixed are the keys' and the plans' collections, which the service relies
// on as they are.
func Fixed() []fixedcollections.Collection {
	return []fixedcollections.Collection{
		{Name: Collection, Refusal: "the api_keys collection cannot be renamed, changed, emptied or deleted: its fields and rules are the service's. " +
			"Issue, change and revoke keys on the staff page (/staff/) or with 'petstore keys'"},
		{Name: PlansCollection, Refusal: "the plans collection cannot be renamed, changed, emptied or deleted: its fields and rules are the service's. " +
			"Add plans and change their quotas as its records, in the dashboard"},
	}
}

// Bind keeps the dashboard (PocketBase's records API) from
// making or breaking keys, and every save of a key within the rules.
//
// The dashboard's edit form sends every field back as it was loaded, so a
// form opened before a ban, a roll, a use or an expiry change and saved
// later would lift the ban, undo the roll, turn back the counts or the
// expiry: a save there leaves the fields only the service writes, and the
// expiry, as they are stored. A save that changes one of them itself (an
// edit, not an old form's value) is refused with what to do instead
// (DashboardChange), so that no save reports success and drops what
// staff typed. Lifting a ban and changing an expiry are explicit acts
// (Unban, Change: the staff page or the `keys` command). A
// save that would clear `revoked` is refused, whatever sent it: revocation
// is final. Nor is a key deleted there. A plan's change there is audited
// (plan.changed) and evented, with the quotas before and after.
func Bind(app core.App) {
	keys, plans := fixedcollections.Tags(Collection), fixedcollections.Tags(PlansCollection)
	app.OnRecordCreateRequest(keys...).BindFunc(func(e *core.RecordRequestEvent) error {
		return e.BadRequestError(errCreateKeyInDashboard, nil)
	})
	app.OnRecordDeleteRequest(keys...).BindFunc(func(e *core.RecordRequestEvent) error {
		return e.ForbiddenError(errDeleteKey, nil)
	})
	app.OnRecordUpdateRequest(keys...).BindFunc(func(e *core.RecordRequestEvent) error {
		k := &APIKey{Record: e.Record}
		// The form's `updated` as sent (the request info holds the record's
		// own: an autodate field keeps its value). The body rereads.
		var form struct {
			Updated string `json:"updated" form:"updated"`
		}
		if err := e.BindBody(&form); err != nil {
			return err
		}
		formUpdated := ""
		if d, err := types.ParseDateTime(form.Updated); err == nil {
			formUpdated = d.String()
		}
		if err := k.DashboardChange(formUpdated, time.Now()); err != nil {
			return err
		}
		k.KeepServiceFields()
		// Checked here too, for an answer that says what is wrong at the top,
		// where the dashboard shows it.
		if err := CheckRecord(e.App, k); err != nil {
			return err
		}
		// The save and its audit records in one transaction.
		before := k.Stored()
		return e.App.RunInTransaction(func(tx core.App) error {
			e.App = tx
			if err := e.Next(); err != nil {
				return err
			}
			return WriteAudit(tx, before, k, audit.ActorOf(e.RequestEvent))
		})
	})
	app.OnRecordUpdateRequest(plans...).BindFunc(func(e *core.RecordRequestEvent) error {
		after := &Plan{Record: e.Record}
		before := &Plan{Record: e.Record.Original()}
		return e.App.RunInTransaction(func(tx core.App) error {
			e.App = tx
			if err := e.Next(); err != nil {
				return err
			}
			return WritePlanAudit(tx, before, after, audit.ActorOf(e.RequestEvent))
		})
	})
	// Every save, the dashboard's and the service's alike.
	app.OnRecordValidate(keys...).BindFunc(func(e *core.RecordEvent) error {
		if err := CheckRecord(e.App, &APIKey{Record: e.Record}); err != nil {
			return err
		}
		return e.Next()
	})
	app.OnRecordValidate(plans...).BindFunc(func(e *core.RecordEvent) error {
		if err := CheckPlan(e.App, &Plan{Record: e.Record}); err != nil {
			return err
		}
		return e.Next()
	})
}
