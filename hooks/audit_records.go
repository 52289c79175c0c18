package hooks

import (
	"errors"
	"log/slog"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/types"

	"petstore/internal/audit"
)

// DefaultAuditRetention is --audit-retention's default.
const DefaultAuditRetention = 365 * 24 * time.Hour

// errAuditAppendOnly answers any attempt to write the trail through the
// records API, superusers included.
var errAuditAppendOnly = errors.New("the audit trail is append-only: the service writes it, nobody changes or deletes a record")

// bindAuditRecords keeps audit_log append-only, and logs and counts each
// record once its transaction commits (counted gets its action). The
// records API may only read it (superusers); a save or delete of an
// existing record is refused whatever sends it (the collection itself is
// fixed: collections_fixed.go). Records older than retention are pruned
// daily (0 keeps them forever), by a statement of its own, which no record
// hook sees; a backup restore's carry (backups.go) writes by statements too.
func bindAuditRecords(app core.App, log *slog.Logger, retention time.Duration, counted func(audit.Action)) {
	trail := collectionTags(audit.Collection)
	refuse := func(e *core.RecordRequestEvent) error { return e.ForbiddenError(errAuditAppendOnly.Error(), nil) }
	app.OnRecordCreateRequest(trail...).BindFunc(refuse)
	app.OnRecordUpdateRequest(trail...).BindFunc(refuse)
	app.OnRecordDeleteRequest(trail...).BindFunc(refuse)
	app.OnRecordUpdate(trail...).BindFunc(func(e *core.RecordEvent) error { return errAuditAppendOnly })
	app.OnRecordDelete(trail...).BindFunc(func(e *core.RecordEvent) error { return errAuditAppendOnly })

	// Logged once the change's transaction commits. Not an after-create
	// hook: petstore binds none, so that pets' events know when somebody
	// listens (pet_events.go).
	app.OnRecordCreateExecute(trail...).BindFunc(func(e *core.RecordEvent) error {
		if err := e.Next(); err != nil {
			return err
		}
		r := e.Record
		logIt := func() {
			action := r.GetString(audit.ActionField)
			about := []any{"key", r.GetString(audit.KeyField)}
			if id := r.GetString(audit.WebhookField); id != "" {
				about = []any{"webhook", id}
			}
			if number := r.GetString(audit.CategoryField); number != "" {
				about = []any{"category", number}
			}
			log.Info("Audit: "+action, append(about, "actor", r.GetString(audit.ActorField),
				"actorEmail", r.GetString(audit.ActorEmailField), "address", r.GetString(audit.AddressField),
				"requestId", r.GetString(audit.RequestIDField), "details", audit.ForLog([]byte(r.GetString(audit.DetailsField))))...)
			counted(audit.Action(action))
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
		if _, err := app.NonconcurrentDB().Delete(audit.Collection, dbx.NewExp(audit.CreatedField+" < {:cutoff}", dbx.Params{"cutoff": cutoff.String()})).Execute(); err != nil {
			log.Error("Could not prune the audit trail", "error", err)
		}
	})
}
