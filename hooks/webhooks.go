package hooks

import (
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/internal/categories"
	"petstore/internal/pets"
	"petstore/internal/webhooks"
)

// errWebhooksStaffAPI answers a write of webhook_endpoints through the
// records API: the staff API checks URLs, makes secrets and audits each
// change.
var errWebhooksStaffAPI = errors.New("webhook endpoints are added, changed and deleted through the staff page (/staff/) or /api/petstore/webhooks, which check their URLs, make their secrets and record each change in the audit trail")

// errWebhookHistoryServiceOnly answers a write of the outbox or the delivery
// history through the records API, superusers included.
var errWebhookHistoryServiceOnly = errors.New("webhook events and delivery attempts are written by the service only: resend a failed event on the staff page (/staff/); --webhooks-retention prunes them")

// auditEvents are the audit actions that are webhook events too, by the
// event's type.
var auditEvents = map[audit.Action]webhooks.Type{
	audit.KeyCreated:  webhooks.KeyCreated,
	audit.KeyRolled:   webhooks.KeyRolled,
	audit.KeyRevoked:  webhooks.KeyRevoked,
	audit.KeyBanned:   webhooks.KeyBanned,
	audit.PlanChanged: webhooks.PlanChanged,

	audit.CategoryCreated: webhooks.CategoryCreated,
	audit.CategoryRenamed: webhooks.CategoryRenamed,
	audit.CategoryDeleted: webhooks.CategoryDeleted,
}

// bindWebhookEvents writes the webhook events of changes made outside the
// pets writer into the outbox, in their transactions: the pets created as
// records (the dashboard, the records API), and the key and category
// changes, which every path (staff API, dashboard, keys and categories
// commands, limiter) writes to the audit trail in its transaction. It also keeps the webhooks' collections
// out of the records API's writes, and the secrets out of its answers.
func bindWebhookEvents(app core.App, outbox *webhooks.Outbox) {
	// A record's save runs in a transaction only when its caller opened
	// one: the event's write needs one with the pet's.
	app.OnRecordCreate(pets.Collection).BindFunc(func(e *core.RecordEvent) error {
		if e.App.TxInfo() != nil {
			return e.Next()
		}
		return e.App.RunInTransaction(func(tx core.App) error {
			e.App = tx
			return e.Next()
		})
	})
	app.OnRecordCreateExecute(pets.Collection).BindFunc(func(e *core.RecordEvent) error {
		if err := e.Next(); err != nil {
			return err
		}
		if !outbox.Subscribed(webhooks.PetCreated) {
			return nil
		}
		id, _ := strconv.ParseInt(e.Record.Id, 10, 64)
		pet := pets.Pet{ID: id, Name: e.Record.GetString("name"), CategoryID: int64(e.Record.GetInt("categoryId")),
			Status: e.Record.GetString("status")}
		return outbox.Write(e.App, webhooks.Event{Type: webhooks.PetCreated, Data: pet})
	})
	app.OnRecordCreateExecute(collectionTags(audit.Collection)...).BindFunc(func(e *core.RecordEvent) error {
		if err := e.Next(); err != nil {
			return err
		}
		t, ok := auditEvents[audit.Action(e.Record.GetString(audit.ActionField))]
		if !ok || !outbox.Subscribed(t) {
			return nil
		}
		var data any
		var err error
		switch {
		case t == webhooks.PlanChanged:
			data, err = planData(e.App, e.Record)
		case e.Record.GetString(audit.CategoryField) != "":
			data, err = categories.EventOf(e.Record)
		default:
			data, err = keyData(e.App, e.Record.GetString(audit.KeyField))
		}
		if err != nil {
			return err
		}
		return outbox.Write(e.App, webhooks.Event{Type: t, Data: data})
	})

	// The secrets' fields are hidden, but PocketBase shows hidden fields to
	// superusers, when the enrichment's last step (after every handler's
	// Next) unhides them: every answer, realtime message and dashboard
	// view drops them again here, after that step.
	app.OnRecordEnrich(collectionTags(webhooks.EndpointsCollection)...).BindFunc(func(e *core.RecordEnrichEvent) error {
		r := e.Record // the event moves on to the next record in Next
		if err := e.Next(); err != nil {
			return err
		}
		r.Hide("secret", "previous_secret")
		return nil
	})
	bindWebhookRefusals(app)
}

// webhookCollections are the webhooks' collections.
var webhookCollections = []string{webhooks.EndpointsCollection, webhooks.EventsCollection, webhooks.AttemptsCollection}

// bindWebhookRefusals keeps every write of the webhooks' collections out of
// the records API and the dashboard, superusers included: the endpoints
// change through the staff API alone, which audits each change, and the
// outbox and the delivery history are the service's (its writes are SQL
// statements and the cascade of an endpoint's deletion, which no request
// hook sees). The collections themselves are fixed (collections_fixed.go).
func bindWebhookRefusals(app core.App) {
	for _, c := range webhookCollections {
		err := errWebhookHistoryServiceOnly
		if c == webhooks.EndpointsCollection {
			err = errWebhooksStaffAPI
		}
		refuse := func(e *core.RecordRequestEvent) error { return e.ForbiddenError(err.Error(), nil) }
		app.OnRecordCreateRequest(collectionTags(c)...).BindFunc(refuse)
		app.OnRecordUpdateRequest(collectionTags(c)...).BindFunc(refuse)
		app.OnRecordDeleteRequest(collectionTags(c)...).BindFunc(refuse)
	}
}

// keyEvent is a key event's data: never the key, its hash or prefix.
type keyEvent struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Plan  string `json:"plan"`
	State string `json:"state"`
}

func keyData(app core.App, id string) (keyEvent, error) {
	r, err := app.FindRecordById(apikeys.Collection, id)
	if err != nil {
		return keyEvent{}, err
	}
	k := &apikeys.APIKey{Record: r}
	plan := k.PlanID()
	if p, err := app.FindRecordById(apikeys.PlansCollection, plan); err == nil {
		plan = p.GetString("name")
	}
	return keyEvent{ID: r.Id, Name: k.Name(), Plan: plan, State: k.State(time.Now())}, nil
}

// planEvent is plan.changed's data: the plan as it is now, and the changes
// as the audit record holds them.
type planEvent struct {
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	PerMinute int64          `json:"perMinute"`
	PerDay    int64          `json:"perDay"`
	Changes   map[string]any `json:"changes"`
}

// planData is the data of the plan.changed event that record tells of.
func planData(app core.App, record *core.Record) (planEvent, error) {
	var details map[string]any
	if err := record.UnmarshalJSONField(audit.DetailsField, &details); err != nil {
		return planEvent{}, err
	}
	about, _ := details["plan"].(map[string]any)
	id, _ := about["id"].(string)
	r, err := app.FindRecordById(apikeys.PlansCollection, id)
	if err != nil {
		return planEvent{}, err
	}
	p := &apikeys.Plan{Record: r}
	delete(details, "plan")
	return planEvent{ID: p.Id, Name: p.Name(), PerMinute: p.PerMinute(), PerDay: p.PerDay(), Changes: details}, nil
}

// dayQuotaEvents writes key.day_quota_reached once per key and UTC day:
// once per instance by memory, once across instances by the outbox's
// unique index on the event's dedupe text.
type dayQuotaEvents struct {
	app    core.App
	outbox *webhooks.Outbox
	log    *slog.Logger
	sent   sync.Map // key id → the UTC day (YYYY-MM-DD) written
}

// reached is the /v1 limiter's news that keyID used up its day at day. The
// write happens beside the request, which it never delays.
func (d *dayQuotaEvents) reached(keyID string, day time.Time) {
	date := day.UTC().Format(time.DateOnly)
	if prev, ok := d.sent.Load(keyID); ok && prev == date {
		return
	}
	d.sent.Store(keyID, date)
	if !d.outbox.Subscribed(webhooks.KeyDayQuotaReached) {
		return
	}
	go func() {
		err := d.app.RunInTransaction(func(tx core.App) error {
			data, err := keyData(tx, keyID)
			if err != nil {
				return err
			}
			return d.outbox.Write(tx, webhooks.Event{Type: webhooks.KeyDayQuotaReached, Data: data,
				Dedupe: string(webhooks.KeyDayQuotaReached) + ":" + keyID + ":" + date})
		})
		if err != nil {
			d.log.Error("Webhooks: could not write a key.day_quota_reached event", "key", keyID, "error", err)
		}
	}()
}
