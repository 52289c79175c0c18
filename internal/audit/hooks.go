package audit

import (
	"errors"
	"log/slog"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/types"

	"petstore/internal/fixedcollections"
	"petstore/internal/requestid"
)

// DefaultRetention is --audit-retention's default.
const DefaultRetention = 365 * 24 * time.Hour

// errAuditAppendOnly answers any attempt to write the trail through the
// records API, superusers included.
var errAuditAppendOnly = errors.New("the audit trail is append-only: the service writes it, nobody changes or deletes a record")

// Fixed is the trail's collection, which the service relies on as it is.
func Fixed() fixedcollections.Collection {
	return fixedcollections.Collection{Name: Collection, Refusal: "the audit trail's collection cannot be renamed, changed, emptied or deleted: " +
		"its records are kept for the retention period (--audit-retention)"}
}

// ActorOf is who sent e: the superuser signed in, if any, from the client's
// address, with the request's id.
func ActorOf(e *core.RequestEvent) Actor {
	by := Actor{Address: e.RealIP(), RequestID: requestid.From(e.Request.Context())}
	if e.Auth != nil {
		by.ID, by.Email = e.Auth.Id, e.Auth.Email()
	}
	return by
}

// Bind keeps audit_log append-only, and logs and counts each
// record once its transaction commits (counted gets its action). The
// records API may only read it (superusers); a save or delete of an
// existing record is refused whatever sends it (the collection itself is
// fixed: Fixed). Records older than retention are pruned daily (0 keeps
// them forever), by a statement of its own, which no record hook sees; a
// backup restore's carry (restore.go) writes by statements too.
func Bind(app core.App, log *slog.Logger, retention time.Duration, counted func(Action)) {
	trail := fixedcollections.Tags(Collection)
	refuse := func(e *core.RecordRequestEvent) error { return e.ForbiddenError(errAuditAppendOnly.Error(), nil) }
	app.OnRecordCreateRequest(trail...).BindFunc(refuse)
	app.OnRecordUpdateRequest(trail...).BindFunc(refuse)
	app.OnRecordDeleteRequest(trail...).BindFunc(refuse)
	app.OnRecordUpdate(trail...).BindFunc(func(e *core.RecordEvent) error { return errAuditAppendOnly })
	app.OnRecordDelete(trail...).BindFunc(func(e *core.RecordEvent) error { return errAuditAppendOnly })

	// Logged once the change's transaction commits. Not an after-create
	// hook: petstore binds none, so that pets' events know when somebody
	// listens (internal/pets).
	app.OnRecordCreateExecute(trail...).BindFunc(func(e *core.RecordEvent) error {
		if err := e.Next(); err != nil {
			return err
		}
		r := e.Record
		logIt := func() {
			action := r.GetString(ActionField)
			about := []any{"key", r.GetString(KeyField)}
			if id := r.GetString(WebhookField); id != "" {
				about = []any{"webhook", id}
			}
			if number := r.GetString(CategoryField); number != "" {
				about = []any{"category", number}
			}
			if id := r.GetString(CustomerField); id != "" {
				about = []any{"customer", id}
			}
			log.Info("Audit: "+action, append(about, "actor", r.GetString(ActorField),
				"actorEmail", r.GetString(ActorEmailField), "address", r.GetString(AddressField),
				"requestId", r.GetString(RequestIDField), "details", ForLog([]byte(r.GetString(DetailsField))))...)
			counted(Action(action))
		}
		if tx := e.App.TxInfo(); tx != nil {
			tx.OnComplete(func(txErr error) error {
				if txErr == nil {
					logIt()
				}
				return txErr
			})
			return nil
		}
		logIt()
		return nil
	})

	app.Cron().MustAdd("petstoreAuditPrune", "30 3 * * *", func() {
		if retention <= 0 {
			return
		}
		cutoff, _ := types.ParseDateTime(time.Now().Add(-retention))
		if _, err := app.NonconcurrentDB().Delete(Collection, dbx.NewExp(CreatedField+" < {:cutoff}", dbx.Params{"cutoff": cutoff.String()})).Execute(); err != nil {
			log.Error("Could not prune the audit trail", "error", err)
		}
	})
}
