package webhooks

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/internal/categories"
	"petstore/internal/customers"
	"petstore/internal/fixedcollections"
	"petstore/internal/pets"
	"petstore/internal/writegate"
)

// errWebhooksStaffAPI answers a write of webhook_endpoints through the
// records API: the staff API checks URLs, makes secrets and audits each
// change.
var errWebhooksStaffAPI = errors.New("webhook endpoints are added, changed and deleted through the staff page (/staff/) or /api/petstore/webhooks, which check their URLs, make their secrets and record each change in the audit trail")

// errWebhookHistoryServiceOnly answers a write of the outbox or the delivery
// history through the records API, superusers included.
var errWebhookHistoryServiceOnly = errors.New("webhook events and delivery attempts are written by the service only: resend a failed event on the staff page (/staff/); --webhooks-retention prunes them")

// errCollectionsFixed answers a change, emptying or deletion of a
// webhooks' collection.
const errCollectionsFixed = "the webhooks' collections cannot be renamed, changed, emptied or deleted: " +
	"delete endpoints on the staff page (/staff/), which records it in the audit trail"

// Fixed are the webhooks' collections, which the service relies on as they
// are.
func Fixed() []fixedcollections.Collection {
	fixed := make([]fixedcollections.Collection, len(collections))
	for i, c := range collections {
		fixed[i] = fixedcollections.Collection{Name: c, Refusal: errCollectionsFixed}
	}
	return fixed
}

// auditEvents are the audit actions that are webhook events too, by the
// event's type.
var auditEvents = map[audit.Action]Type{
	audit.KeyCreated:  KeyCreated,
	audit.KeyRolled:   KeyRolled,
	audit.KeyRevoked:  KeyRevoked,
	audit.KeyBanned:   KeyBanned,
	audit.PlanChanged: PlanChanged,

	audit.UsageThreshold: UsageThreshold,

	audit.CategoryCreated: CategoryCreated,
	audit.CategoryRenamed: CategoryRenamed,
	audit.CategoryDeleted: CategoryDeleted,
}

// Bind writes the webhook events of changes made outside the pets writer
// into outbox, in their transactions: the pets created as records (the
// dashboard, the records API), and the key and category changes, which
// every path (staff API, dashboard, keys and categories commands, limiter)
// writes to the audit trail in its transaction. It also keeps the
// webhooks' collections out of the records API's writes, and the secrets
// out of its answers; and it prunes the delivery history older than
// retention daily (0 keeps it forever).
func Bind(app core.App, outbox *Outbox, retention time.Duration, log *slog.Logger) {
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
		return outbox.PetsCreated(e.App, pets.Row{Pet: pets.FromRecord(e.Record)})
	})
	app.OnRecordCreateExecute(fixedcollections.Tags(audit.Collection)...).BindFunc(func(e *core.RecordEvent) error {
		if err := e.Next(); err != nil {
			return err
		}
		t, ok := auditEvents[audit.Action(e.Record.GetString(audit.ActionField))]
		if !ok {
			return nil
		}
		byType, err := outbox.subscriptionsIn(e.App)
		if err != nil || len(byType[t]) == 0 {
			return err
		}
		var data any
		switch {
		case t == PlanChanged:
			data, err = planData(e.App, e.Record)
		case t == UsageThreshold:
			data, err = thresholdData(e.App, e.Record)
		case e.Record.GetString(audit.CategoryField) != "":
			data, err = categories.EventOf(e.Record)
		default:
			data, err = keyData(e.App, e.Record.GetString(audit.KeyField))
		}
		if err != nil {
			return err
		}
		return outbox.writeFor(e.App, byType, []Event{{Type: t, Data: data}})
	})

	// The secrets' fields are hidden, but PocketBase shows hidden fields to
	// superusers, when the enrichment's last step (after every handler's
	// Next) unhides them: every answer, realtime message and dashboard
	// view drops them again here, after that step.
	app.OnRecordEnrich(fixedcollections.Tags(EndpointsCollection)...).BindFunc(func(e *core.RecordEnrichEvent) error {
		r := e.Record // the event moves on to the next record in Next
		if err := e.Next(); err != nil {
			return err
		}
		r.Hide(secretFields...)
		return nil
	})
	bindRefusals(app)
	app.Cron().MustAdd("petstoreWebhooksPrune", "40 3 * * *", func() {
		if retention > 0 {
			if err := Prune(app, retention); err != nil {
				log.Error("Could not prune the webhooks' delivery history", "error", err)
			}
		}
	})
}

// PetsCreated writes pet.created for each of rows, in tx, the transaction
// that created them.
func (o *Outbox) PetsCreated(tx core.App, rows ...pets.Row) error {
	byType, err := o.subscriptionsIn(tx)
	if err != nil || len(byType[PetCreated]) == 0 {
		return err
	}
	events := make([]Event, len(rows))
	for i, row := range rows {
		events[i] = Event{Type: PetCreated, Data: row.Pet, Traceparent: row.Traceparent}
	}
	return o.writeFor(tx, byType, events)
}

// collections are the webhooks' collections.
var collections = []string{EndpointsCollection, EventsCollection, AttemptsCollection}

// bindRefusals keeps every write of the webhooks' collections out of
// the records API and the dashboard, superusers included: the endpoints
// change through the staff API alone, which audits each change, and the
// outbox and the delivery history are the service's (its writes are SQL
// statements and the cascade of an endpoint's deletion, which no request
// hook sees). The collections themselves are fixed (Fixed).
func bindRefusals(app core.App) {
	for _, c := range collections {
		err := errWebhookHistoryServiceOnly
		if c == EndpointsCollection {
			err = errWebhooksStaffAPI
		}
		refuse := func(e *core.RecordRequestEvent) error { return e.ForbiddenError(err.Error(), nil) }
		app.OnRecordCreateRequest(fixedcollections.Tags(c)...).BindFunc(refuse)
		app.OnRecordUpdateRequest(fixedcollections.Tags(c)...).BindFunc(refuse)
		app.OnRecordDeleteRequest(fixedcollections.Tags(c)...).BindFunc(refuse)
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

// thresholdEvent is usage.threshold's data: the key (never the key
// itself, its hash or prefix), its customer if any, and its day window as
// the audit record holds it.
type thresholdEvent struct {
	Key       keyEvent       `json:"key"`
	Customer  *customerEvent `json:"customer"` // null: the key has none
	Threshold int64          `json:"threshold"`
	Window    string         `json:"window"` // "day": the window whose quota was crossed
	Day       string         `json:"day"`
	Limit     int64          `json:"limit"`
	Used      int64          `json:"used"`
	ResetsAt  string         `json:"resetsAt"`
}

type customerEvent struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// thresholdData is the data of the usage.threshold event that record (the
// audit record usage.threshold) tells of.
func thresholdData(app core.App, record *core.Record) (thresholdEvent, error) {
	var details struct {
		Threshold, Limit, Used int64
		Day, ResetsAt          string
	}
	if err := record.UnmarshalJSONField(audit.DetailsField, &details); err != nil {
		return thresholdEvent{}, err
	}
	keyID := record.GetString(audit.KeyField)
	key, err := keyData(app, keyID)
	if err != nil {
		return thresholdEvent{}, err
	}
	ev := thresholdEvent{Key: key, Threshold: details.Threshold, Window: "day", Day: details.Day,
		Limit: details.Limit, Used: details.Used, ResetsAt: details.ResetsAt}
	r, err := app.FindRecordById(apikeys.Collection, keyID)
	if err != nil {
		return thresholdEvent{}, err
	}
	if id := (&apikeys.APIKey{Record: r}).CustomerID(); id != "" {
		c, err := app.FindRecordById(customers.Collection, id)
		if err != nil {
			return thresholdEvent{}, err
		}
		ev.Customer = &customerEvent{ID: c.Id, Name: c.GetString(customers.NameField)}
	}
	return ev, nil
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

// DayQuotaReached is the /v1 limiter's news that a key used up its day:
// it writes key.day_quota_reached once per key and UTC day (dayQuota),
// while gate lets it.
func DayQuotaReached(app core.App, outbox *Outbox, gate writegate.Gate, log *slog.Logger) func(keyID string, day time.Time) {
	d := &dayQuota{app: app, outbox: outbox, gate: gate, log: log}
	return d.reached
}

// dayQuota writes key.day_quota_reached once per key and UTC day:
// once per instance by memory, once across instances by the outbox's
// unique index on the event's dedupe text.
type dayQuota struct {
	app    core.App
	outbox *Outbox
	gate   writegate.Gate
	log    *slog.Logger
	sent   sync.Map // key id → the UTC day (YYYY-MM-DD) written
}

// reached is the /v1 limiter's news that keyID used up its day at day. The
// write happens beside the request, which it never delays; a node that may
// not write by then forgets it, and the next leader's limiter tells of it.
func (d *dayQuota) reached(keyID string, day time.Time) {
	date := day.UTC().Format(time.DateOnly)
	if prev, ok := d.sent.Load(keyID); ok && prev == date {
		return
	}
	d.sent.Store(keyID, date)
	go func() {
		subscribed, err := d.outbox.subscribed(KeyDayQuotaReached)
		if subscribed {
			err = d.gate.Write(d.app, func(tx core.App) error {
				data, err := keyData(tx, keyID)
				if err != nil {
					return err
				}
				return d.outbox.Write(tx, Event{Type: KeyDayQuotaReached, Data: data,
					Dedupe: string(KeyDayQuotaReached) + ":" + keyID + ":" + date})
			})
		}
		if errors.Is(err, writegate.ErrClosed) {
			d.sent.CompareAndDelete(keyID, date)
			d.log.Warn("Webhooks: a key.day_quota_reached event not written: this node may not write", "key", keyID)
			return
		}
		if err != nil {
			d.log.Error("Webhooks: could not write a key.day_quota_reached event", "key", keyID, "error", err)
		}
	}()
}
