package pets

import (
	"strconv"

	"github.com/pocketbase/pocketbase/core"
)

// Row is a pet as a create stored it: its fields, and the instant that is
// both its created and its updated date, as stored (PocketBase's text
// layout, to the millisecond).
type Row struct {
	Pet
	Created string
	// Traceparent names the span of the request that created the pet
	// (tracing.Traceparent), for the work its commit leaves for later (the
	// webhook event); "" with tracing off.
	Traceparent string
}

// Record is the row as PocketBase reads a record from the database: every
// field of collection (the pets collection) prepared from the row's value,
// or from none for the fields a create does not write, and not new.
func (r Row) Record(collection *core.Collection) (*core.Record, error) {
	row := map[string]any{
		"id":         strconv.FormatInt(r.ID, 10),
		"name":       r.Name,
		"categoryId": r.CategoryID,
		"status":     r.Status,
		"created":    r.Created,
		"updated":    r.Created,
	}
	record := core.NewRecord(collection)
	for _, field := range collection.Fields {
		// Raw, as a read sets them: the setters of some fields (autodate)
		// ignore what a caller sets.
		value, err := field.PrepareValue(record, row[field.GetName()])
		if err != nil {
			return nil, err
		}
		record.SetRaw(field.GetName(), value)
	}
	return record, record.PostScan()
}

// FromRecord is the pet a record of the pets collection holds.
func FromRecord(r *core.Record) Pet {
	id, _ := strconv.ParseInt(r.Id, 10, 64)
	return Pet{ID: id, Name: r.GetString("name"), CategoryID: int64(r.GetInt("categoryId")), Status: r.GetString("status")}
}
