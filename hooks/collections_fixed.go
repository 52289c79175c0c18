package hooks

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/internal/webhooks"
)

// fixedCollection is a collection whose schema is the service's: its name,
// fields, rules and indexes change through migrations alone. refusal says
// why, and what to do instead.
type fixedCollection struct {
	name, id, refusal string
}

// fixedCollections are the collections the service's guards, audit trail
// and webhooks rely on. No change to them is harmless enough to allow
// (rules open the records, fields and indexes carry the guards' rules, a
// rename escapes hooks bound by name): a rename, any change, an emptying
// and a deletion through the collections API, its import or the truncate
// route are refused, superusers included.
var fixedCollections = []fixedCollection{
	fixed(apikeys.Collection, "the api_keys collection cannot be renamed, changed, emptied or deleted: its fields and rules are the service's. "+
		"Issue, change and revoke keys on the staff page (/staff/) or with 'petstore keys'"),
	fixed(apikeys.PlansCollection, "the plans collection cannot be renamed, changed, emptied or deleted: its fields and rules are the service's. "+
		"Add plans and change their quotas as its records, in the dashboard"),
	fixed(audit.Collection, "the audit trail's collection cannot be renamed, changed, emptied or deleted: "+
		"its records are kept for the retention period (--audit-retention)"),
	fixed(webhooks.EndpointsCollection, errWebhookCollectionsFixed),
	fixed(webhooks.EventsCollection, errWebhookCollectionsFixed),
	fixed(webhooks.AttemptsCollection, errWebhookCollectionsFixed),
}

// errWebhookCollectionsFixed answers a change, emptying or deletion of a
// webhooks' collection.
const errWebhookCollectionsFixed = "the webhooks' collections cannot be renamed, changed, emptied or deleted: " +
	"delete endpoints on the staff page (/staff/), which records it in the audit trail"

// fixed is the fixed collection name, with the id its migration gave it
// (PocketBase derives a new collection's id from its type and name).
func fixed(name, refusal string) fixedCollection {
	return fixedCollection{name: name, id: core.NewBaseCollection(name).Id, refusal: refusal}
}

// collectionTags are the tags that bind a record hook to the fixed
// collection name: its name and its id, so that no rename escapes it.
func collectionTags(name string) []string {
	return []string{name, core.NewBaseCollection(name).Id}
}

// fixedOne is the fixed collection c is, by id (the one its migration
// gave it, or the one stored under its name) or by name; nil if none.
func fixedOne(app core.App, c *core.Collection) *fixedCollection {
	for i, f := range fixedCollections {
		if c.Id == f.id || c.Name == f.name {
			return &fixedCollections[i]
		}
		if stored, err := app.FindCachedCollectionByNameOrId(f.name); err == nil && stored.Id == c.Id {
			return &fixedCollections[i]
		}
	}
	return nil
}

// stored is the fixed collection f as stored, by id or by name.
func (f fixedCollection) stored(app core.App) (*core.Collection, error) {
	c, err := app.FindCollectionByNameOrId(f.id)
	if err != nil {
		c, err = app.FindCollectionByNameOrId(f.name)
	}
	return c, err
}

// bindFixedCollections refuses every change of a fixed collection through
// PocketBase's APIs: the collections API's update and delete (by id: an
// update request has already renamed the collection it loaded), the import
// (PUT /api/collections/import) and the truncate route. An import that
// holds them unchanged, as an export of every collection does, passes.
func bindFixedCollections(app core.App) {
	refuse := func(e *core.CollectionRequestEvent) error {
		if f := fixedOne(e.App, e.Collection); f != nil {
			return e.ForbiddenError(f.refusal, map[string]any{"collection": f.name})
		}
		return e.Next()
	}
	app.OnCollectionUpdateRequest().BindFunc(refuse)
	app.OnCollectionDeleteRequest().BindFunc(refuse)
	app.OnCollectionsImportRequest().BindFunc(func(e *core.CollectionsImportRequestEvent) error {
		for _, f := range fixedCollections {
			current, err := f.stored(e.App)
			if err != nil {
				continue
			}
			imported := importedAs(e.CollectionsData, current)
			if imported == nil && e.DeleteMissing || imported != nil && !sameCollection(current, imported) {
				return e.ForbiddenError(f.refusal, map[string]any{"collection": f.name})
			}
		}
		return e.Next()
	})
	// The truncate route has no request hook; its record deletes are the
	// model's, which the cascade of an endpoint's deletion uses too.
	app.OnServe().BindFunc(func(se *core.ServeEvent) error {
		se.Router.Bind(&hook.Handler[*core.RequestEvent]{
			Id:       "petstoreTruncateGuard",
			Priority: truncateGuardPriority,
			Func: func(e *core.RequestEvent) error {
				if e.Request.Method != http.MethodDelete || e.Request.Pattern != truncatePattern {
					return e.Next()
				}
				c, err := e.App.FindCachedCollectionByNameOrId(e.Request.PathValue("collection"))
				if err != nil {
					return e.Next()
				}
				if f := fixedOne(e.App, c); f != nil {
					return e.ForbiddenError(f.refusal, map[string]any{"collection": f.name})
				}
				return e.Next()
			},
		})
		return se.Next()
	})
}

// truncateGuardPriority runs the guard after the superuser's token is
// loaded and the body bounded; on /v1 it passes every request by
// (internal/api's middleware_order.go lists the chain).
const truncateGuardPriority = apis.DefaultBodyLimitMiddlewarePriority + 1

// truncatePattern is the route of PocketBase's "truncate collection".
const truncatePattern = "DELETE /api/collections/{collection}/truncate"

// importedAs is the import's entry for current, matched by id as
// PocketBase's import matches, or by name; nil when there is none.
func importedAs(data []map[string]any, current *core.Collection) map[string]any {
	for _, d := range data {
		if id, _ := d["id"].(string); id == current.Id {
			return d
		}
	}
	for _, d := range data {
		if name, _ := d["name"].(string); name == current.Name {
			return d
		}
	}
	return nil
}

// sameCollection tells whether imported describes current as it is: both
// read into a collection and written out again, their dates aside.
func sameCollection(current *core.Collection, imported map[string]any) bool {
	raw, err := json.Marshal(imported)
	if err != nil {
		return false
	}
	read := &core.Collection{}
	if err := json.Unmarshal(raw, read); err != nil {
		return false
	}
	a, errA := comparable(current)
	b, errB := comparable(read)
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

// comparable is c's JSON without its created and updated dates.
func comparable(c *core.Collection) ([]byte, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	delete(m, "created")
	delete(m, "updated")
	return json.Marshal(m) // maps are written in key order
}
