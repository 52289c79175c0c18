// Package fixedcollections keeps the collections the service relies on
// fixed: no rename, change, emptying or deletion through PocketBase's APIs,
// superusers included. Rules open the records, fields and indexes carry the
// guards' rules, and a rename escapes hooks bound by name. Each owner
// names its collections and why they are fixed; Tags binds a record hook to
// one whatever it is renamed to.
package fixedcollections

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"
	"github.com/spf13/cast"
)

// Collection is a collection whose schema is the service's: its name,
// fields, rules and indexes change through migrations alone. Refusal says
// why, and what to do instead.
type Collection struct {
	Name, Refusal string
}

// Tags are the tags that bind a record hook to the fixed collection name:
// its name and its id (the one its migration gave it: PocketBase derives a
// new collection's id from its type and name), so that no rename escapes it.
func Tags(name string) []string {
	return []string{name, core.NewBaseCollection(name).Id}
}

// id is the id f's migration gave it.
func (f Collection) id() string { return core.NewBaseCollection(f.Name).Id }

// sameName reports whether PocketBase may take name to name the collection
// called stored: FindCollectionByNameOrId, which the collections API and
// the import look collections up with, compares strings.ToLower of the name
// asked for with SQLite's LOWER of the stored one, so "AUDIT_LOG", and
// "api_\u212Aeys" with the Kelvin sign, name audit_log and api_keys.
// Unicode case folding matches every such name, and a few more.
func sameName(name, stored string) bool {
	return strings.EqualFold(name, stored)
}

// find is the fixed collection c is, by id (the one its migration gave it,
// or the one stored under its name) or by name; nil if none.
func find(app core.App, fixed []Collection, c *core.Collection) *Collection {
	for i, f := range fixed {
		if c.Id == f.id() || sameName(c.Name, f.Name) {
			return &fixed[i]
		}
		if stored, err := app.FindCachedCollectionByNameOrId(f.Name); err == nil && stored.Id == c.Id {
			return &fixed[i]
		}
	}
	return nil
}

// stored is the fixed collection f as stored, by id or by name.
func (f Collection) stored(app core.App) (*core.Collection, error) {
	c, err := app.FindCollectionByNameOrId(f.id())
	if err != nil {
		c, err = app.FindCollectionByNameOrId(f.Name)
	}
	return c, err
}

// Bind refuses every change of the fixed collections through
// PocketBase's APIs: the collections API's update and delete (by id: an
// update request has already renamed the collection it loaded), the import
// (PUT /api/collections/import) and the truncate route. An import that
// holds them unchanged, as an export of every collection does, passes.
func Bind(app core.App, fixed ...Collection) {
	refuse := func(e *core.CollectionRequestEvent) error {
		if f := find(e.App, fixed, e.Collection); f != nil {
			return e.ForbiddenError(f.Refusal, map[string]any{"collection": f.Name})
		}
		return e.Next()
	}
	app.OnCollectionUpdateRequest().BindFunc(refuse)
	app.OnCollectionDeleteRequest().BindFunc(refuse)
	app.OnCollectionsImportRequest().BindFunc(func(e *core.CollectionsImportRequestEvent) error {
		for _, f := range fixed {
			current, err := f.stored(e.App)
			if err != nil {
				continue
			}
			imported := importedAs(e.CollectionsData, current)
			if imported == nil && e.DeleteMissing || imported != nil && !sameCollection(current, imported) {
				return e.ForbiddenError(f.Refusal, map[string]any{"collection": f.Name})
			}
		}
		return e.Next()
	})
	// The truncate route has no request hook; its record deletes are the
	// model's, which the cascade of an endpoint's deletion uses too.
	app.OnServe().BindFunc(func(se *core.ServeEvent) error {
		se.Router.Bind(&hook.Handler[*core.RequestEvent]{
			Id:       "petstoreTruncateGuard",
			Priority: GuardPriority,
			Func: func(e *core.RequestEvent) error {
				if e.Request.Method != http.MethodDelete || e.Request.Pattern != truncatePattern {
					return e.Next()
				}
				c, err := e.App.FindCachedCollectionByNameOrId(e.Request.PathValue("collection"))
				if err != nil {
					return e.Next()
				}
				if f := find(e.App, fixed, c); f != nil {
					return e.ForbiddenError(f.Refusal, map[string]any{"collection": f.Name})
				}
				return e.Next()
			},
		})
		return se.Next()
	})
}

// GuardPriority runs a guard of PocketBase's routes (the truncate route's,
// the backups') after the superuser's token is loaded and the body
// bounded; on /v1 it passes every request by (internal/api's
// middleware_order.go lists the chain).
const GuardPriority = apis.DefaultBodyLimitMiddlewarePriority + 1

// truncatePattern is the route of PocketBase's "truncate collection".
const truncatePattern = "DELETE /api/collections/{collection}/truncate"

// importedAs is the import's entry for current, matched as PocketBase's
// import matches: by the entry's id, or by its name when it has no id, each
// compared as FindCollectionByNameOrId compares; nil when there is none.
func importedAs(data []map[string]any, current *core.Collection) map[string]any {
	for _, d := range data {
		identifier := cast.ToString(d["id"])
		if identifier == "" {
			identifier = cast.ToString(d["name"])
		}
		if identifier == current.Id || sameName(identifier, current.Name) {
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
	return Same(current, read)
}

// Same tells whether a and b are one collection as stored: id, name, type,
// fields, rules, indexes and options, their dates aside.
func Same(a, b *core.Collection) bool {
	rawA, errA := comparable(a)
	rawB, errB := comparable(b)
	return errA == nil && errB == nil && bytes.Equal(rawA, rawB)
}

// In is f as found among collections: by the id its migration gave it, or
// by its name as PocketBase compares names; nil if it is not there.
func (f Collection) In(collections []*core.Collection) *core.Collection {
	for _, c := range collections {
		if c.Id == f.id() || sameName(c.Name, f.Name) {
			return c
		}
	}
	return nil
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
