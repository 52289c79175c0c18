package pets

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"

	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/realtime"
)

// Events tells PocketBase of the pets /v1 creates, after their commit,
// as its own record save does after a create: it triggers the app's
// OnModelAfterCreateSuccess chain with a record built from the stored row.
// That chain is PocketBase's: its record proxy runs the
// OnRecordAfterCreateSuccess handlers, and its realtime handler sends the
// create message to subscribers, filtered by the collection's rules and
// each client's auth. The before-hooks do not run (docs/api.md says why).
//
// When nobody listens (no realtime client subscribed to pets, and no
// handler on those two hooks beyond PocketBase's own) no record is built.
type Events struct {
	app core.App
	log *slog.Logger
	// own is the count of PocketBase's own handlers on the after-create
	// hooks; petstore binds none there.
	own afterCreateHandlers
}

// afterCreateHandlers counts the handlers of the two hooks a create fires.
type afterCreateHandlers struct{ model, record int }

func countAfterCreateHandlers(app core.App) afterCreateHandlers {
	return afterCreateHandlers{
		model:  app.OnModelAfterCreateSuccess().Length(),
		record: app.OnRecordAfterCreateSuccess().Length(),
	}
}

// pocketBaseHandlers counts the handlers PocketBase itself binds to the
// after-create hooks of an app that serves (its record, collection and
// settings proxies, and the realtime broadcast): those of a new app once
// PocketBase's router is built. Counting them on an app of its own keeps
// the count right whenever and wherever the self-hoster binds theirs.
var pocketBaseHandlers = sync.OnceValues(func() (afterCreateHandlers, error) {
	app := core.NewBaseApp(core.BaseAppConfig{})
	if _, err := apis.NewRouter(app); err != nil {
		return afterCreateHandlers{}, fmt.Errorf("count PocketBase's own after-create hooks: %w", err)
	}
	return countAfterCreateHandlers(app), nil
})

// NewEvents makes the events of app's /v1 creates.
func NewEvents(app core.App, log *slog.Logger) (*Events, error) {
	own, err := pocketBaseHandlers()
	if err != nil {
		return nil, err
	}
	return &Events{app: app, log: log, own: own}, nil
}

// Created is the pets writer's OnCreated: it runs in the goroutine of the
// request that created rows, after their commit and before the answer.
func (p *Events) Created(rows []Row) {
	if !p.heard() {
		return
	}
	collection, err := p.app.FindCachedCollectionByNameOrId(Collection)
	if err != nil {
		p.log.Error("Could not announce the pets created through /v1", "error", err)
		return
	}
	for _, row := range rows {
		p.announce(collection, row)
	}
}

// heard reports whether anybody listens to pets' creates: a handler bound
// to an after-create hook beyond PocketBase's own (for any collection: a
// hook's tags are not visible), or a realtime client subscribed to pets.
func (p *Events) heard() bool {
	now := countAfterCreateHandlers(p.app)
	return now.model > p.own.model || now.record > p.own.record || p.subscribed()
}

// subscribed reports whether a realtime client subscribes to a pets topic.
func (p *Events) subscribed() bool {
	if p.app.SubscriptionsBroker().TotalClients() == 0 {
		return false
	}
	collection, err := p.app.FindCachedCollectionByNameOrId(Collection)
	if err != nil {
		return true // let the broadcast decide, and log
	}
	return realtime.Subscribed(p.app, collection)
}

// announce fires the after-create hooks for one row. The pet is stored and
// its create answered with 201 whatever a handler does: a handler's error,
// or its panic, is logged.
func (p *Events) announce(collection *core.Collection, row Row) {
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("An after-create hook of pets panicked on a pet created through /v1",
				"id", row.ID, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	record, err := row.Record(collection)
	if err != nil {
		p.log.Error("Could not build the record of a pet created through /v1", "id", row.ID, "error", err)
		return
	}
	event := new(core.ModelEvent)
	event.App = p.app
	event.Context = context.Background()
	event.Type = core.ModelEventTypeCreate
	event.Model = record
	if err := p.app.OnModelAfterCreateSuccess().Trigger(event); err != nil {
		p.log.Error("An after-create hook of pets failed on a pet created through /v1",
			"id", row.ID, "error", err)
	}
}
