// Package realtimeauth ends the realtime stream of a client whose signed-in
// record was deleted, or whose password changed, behind this process's back.
package realtimeauth

import (
	"errors"
	"log/slog"

	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/dataversion"
)

// checkedKey holds, in a realtime client's store, the data
// version at which its signed-in record was last found unchanged.
const checkedKey = "petstore.authChecked"

// errAuthGone ends a realtime stream: PocketBase closes a stream
// whose message cannot be sent.
var errAuthGone = errors.New("the stream's signed-in record was deleted or its password changed")

// Bind ends the realtime stream of a client whose signed-in
// record (a superuser, say) was deleted, or whose password changed, since it
// subscribed. PocketBase forgets such a client's sign-in when the change is
// made through this process, but not when the CLI or another instance on the
// same data directory makes it: without this check, a superuser deleted by
// `petstore superuser delete` keeps hearing every record event, API keys
// included. The record is read again before a message goes out whenever the
// database has changed since the last check (the data version), and the
// stream ends, unsent, if the record is gone or its token key changed.
func Bind(app core.App, version *dataversion.Watch, log *slog.Logger) {
	app.OnRealtimeMessageSend().BindFunc(func(e *core.RealtimeMessageEvent) error {
		auth, _ := e.Client.Get(apis.RealtimeClientAuthKey).(*core.Record)
		if auth == nil {
			return e.Next()
		}
		v, err := version.Version()
		if err != nil {
			return err
		}
		now := v.Of() // any auth collection: every change counts
		if checked, ok := e.Client.Get(checkedKey).(int64); ok && checked == now {
			return e.Next()
		}
		current, err := e.App.FindRecordById(auth.Collection(), auth.Id)
		if err != nil || current.TokenKey() != auth.TokenKey() {
			e.Client.Unset(apis.RealtimeClientAuthKey)
			log.Info("Realtime stream closed: its signed-in record was deleted or its password changed elsewhere",
				"collection", auth.Collection().Name, "record", auth.Id)
			return errAuthGone
		}
		e.Client.Set(checkedKey, now)
		return e.Next()
	})
}
