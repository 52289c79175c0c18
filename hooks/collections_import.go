package hooks

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/audit"
)

// errFixedCollectionsImport answers an import of collections that would
// change or delete one that petstore keeps fixed.
var errFixedCollectionsImport = errors.New("the import would change or delete a collection that petstore keeps fixed (audit_log and the webhooks'): leave them out of the changes, and do not delete missing collections unless the import holds them as they are")

// bindCollectionsImportGuard refuses an import of collections (the
// dashboard's Settings, Import collections: PUT /api/collections/import)
// that changes or deletes the audit trail's collection or the webhooks'.
// Their collections API refuses such changes one by one; an import would
// make them all in one transaction, past those hooks. An import that holds
// them unchanged, as an export of every collection does, passes.
func bindCollectionsImportGuard(app core.App) {
	fixed := append([]string{audit.Collection}, webhookCollections...)
	app.OnCollectionsImportRequest().BindFunc(func(e *core.CollectionsImportRequestEvent) error {
		for _, name := range fixed {
			current, err := e.App.FindCollectionByNameOrId(name)
			if err != nil {
				continue
			}
			imported := importedAs(e.CollectionsData, current)
			if imported == nil && e.DeleteMissing || imported != nil && !sameCollection(current, imported) {
				return e.ForbiddenError(errFixedCollectionsImport.Error(), map[string]any{"collection": name})
			}
		}
		return e.Next()
	})
}

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
