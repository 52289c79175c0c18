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

// bindAuditRecords keeps audit_log append-only and logs each record. The
// records API may only read it (superusers); a save or delete of an
// existing record is refused whatever sends it. Records older than
// retention are pruned daily (0 keeps them forever), by a statement of its
// own, which no record hook sees.
func bindAuditRecords(app core.App, log *slog.Logger, retention func() time.Duration) {
	refuse := func(e *core.RecordRequestEvent) error { return e.ForbiddenError(errAuditAppendOnly.Error(), nil) }
	app.OnRecordCreateRequest(audit.Collection).BindFunc(refuse)
	app.OnRecordUpdateRequest(audit.Collection).BindFunc(refuse)
	app.OnRecordDeleteRequest(audit.Collection).BindFunc(refuse)
	app.OnRecordUpdate(audit.Collection).BindFunc(func(e *core.RecordEvent) error { return errAuditAppendOnly })
	app.OnRecordDelete(audit.Collection).BindFunc(func(e *core.RecordEvent) error { return errAuditAppendOnly })

	// Logged once the change's transaction commits. Not an after-create
	// hook: petstore binds none, so that pets' events know when somebody
	// listens (pet_events.go).
	app.OnRecordCreateExecute(audit.Collection).BindFunc(func(e *core.RecordEvent) error {
		if err := e.Next(); err != nil {
			return err
		}
		r := e.Record
		logIt := func() {
			log.Info("Audit: "+r.GetString("action"), "key", r.GetString("key"), "actor", r.GetString("actor"),
				"actorEmail", r.GetString("actor_email"), "address", r.GetString("address"), "details", r.Get("details"))
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
		keep := retention()
		if keep <= 0 {
			return
		}
		cutoff, _ := types.ParseDateTime(time.Now().Add(-keep))
		if _, err := app.NonconcurrentDB().Delete(audit.Collection, dbx.NewExp("created < {:cutoff}", dbx.Params{"cutoff": cutoff.String()})).Execute(); err != nil {
			log.Error("Could not prune the audit trail", "error", err)
		}
	})
}
