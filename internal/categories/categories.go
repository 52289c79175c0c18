// Package categories names the numbers pets carry as their categoryId.
//
// A category is a record of the categories collection: its number (the
// categoryId pets carry and clients send), a name, unique whatever the
// letter case, and an optional description. Staff create, rename and delete
// categories in the dashboard, with the categories command (Create, Rename,
// Delete) or from the staff page; every path keeps the same rules (Bind)
// and writes each change to the audit trail in its transaction, from which
// the webhooks' events follow. A pet may carry a number no category has: an
// unnamed category, which staff see as "unnamed category N" and may name.
// A category that pets use cannot be deleted.
//
// Clients list the categories through /v1 (Reads, prepared once, like the
// pets' reads).
package categories

import (
	"database/sql"
	"errors"
	"strconv"
	"strings"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/audit"
	"petstore/internal/fielderr"
	"petstore/internal/pets"
	"petstore/internal/strictinput"
)

// Collection is the PocketBase collection of categories.
const Collection = "categories"

// The fields of categories. This file and the migrations are the only
// places that name them.
const (
	NumberField      = "number"
	NameField        = "name"
	DescriptionField = "description"
)

// The rules of a stored category; the collection's fields (migrations)
// enforce the bounds too.
const (
	// MaxNumber is the largest number, as for a pet's categoryId: 2^53-1.
	MaxNumber = pets.MaxCategoryID
	// MaxNameLen bounds a name, in characters.
	MaxNameLen = 100
)

// Category is a category as /v1 lists it.
type Category struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// Record is a record of the categories collection, read and written through
// its methods (a record proxy, as PocketBase's core.MFA).
type Record struct {
	*core.Record
}

var _ core.RecordProxy = (*Record)(nil)

// ProxyRecord returns the proxied record.
func (c *Record) ProxyRecord() *core.Record { return c.Record }

// SetProxyRecord loads record into the proxy.
func (c *Record) SetProxyRecord(record *core.Record) { c.Record = record }

// Number is the category's number: the categoryId of its pets.
func (c *Record) Number() int64 { return int64(c.GetFloat(NumberField)) }

// Name is the category's name.
func (c *Record) Name() string { return c.GetString(NameField) }

// Name is name as it is stored: without surrounding spaces.
func Name(name string) string { return strings.TrimSpace(name) }

// Unnamed is how staff see a number that pets carry and no category names.
func Unnamed(number int64) string { return "unnamed category " + strconv.FormatInt(number, 10) }

// ErrNotFound is the error for a number that no category has.
var ErrNotFound = errors.New("no category has this number")

// errRule is the kind of a refusal by the categories' rules of a value;
// errConflict of one that the other records rule out (a name or number
// taken, pets that carry the category).
var (
	errRule     = &fielderr.Kind{Code: "validation_category_rule"}
	errConflict = &fielderr.Kind{Code: "validation_category_rule", Conflict: true}
)

// The refusals of the rules, each about the field it names.
var (
	ErrNameTaken = &fielderr.Error{Field: NameField, Kind: errConflict,
		Message: "the name is taken: another category has this name (names are compared without regard to letter case)"}
	ErrNumberTaken = &fielderr.Error{Field: NumberField, Kind: errConflict,
		Message: "the number is taken: another category has this number"}
	ErrNumberFixed = &fielderr.Error{Field: NumberField, Kind: errRule,
		Message: "a category's number cannot change: its pets carry it. Create a category with the new number instead"}
	ErrUnprintable = &fielderr.Error{Field: NameField, Kind: errRule,
		Message: "the name cannot hold control, text-direction or invisible characters (newline, U+202E, U+200B and the like)"}
	ErrNumberInvalid = fielderr.New(errRule, NumberField, "the number is a whole number from 1 to %d", int64(MaxNumber))
)

// inUse refuses the deletion of category c, which n pets carry.
func inUse(c *Record, n int64) error {
	pets := "1 pet uses it"
	if n != 1 {
		pets = strconv.FormatInt(n, 10) + " pets use it"
	}
	return fielderr.New(errConflict, "", "Category %d (%s) cannot be deleted: %s. Move them to another category first",
		c.Number(), c.Name(), pets)
}

// check applies the rules every saved category keeps that its fields do
// not: a printable name, unique whatever the letter case (the unique index
// compares ASCII letters without case; this check tells which field), a
// unique number that never changes.
func check(app core.App, c *Record) error {
	name := c.Name()
	if strings.ContainsFunc(name, strictinput.Unprintable) {
		return ErrUnprintable
	}
	if !c.IsNew() && c.Number() != int64(c.Original().GetFloat(NumberField)) {
		return ErrNumberFixed
	}
	for _, other := range []struct {
		where  string
		params dbx.Params
		taken  error
	}{
		{"lower(name) = lower({:name}) AND id != {:id}", dbx.Params{"name": name, "id": c.Id}, ErrNameTaken},
		{"number = {:number} AND id != {:id}", dbx.Params{"number": c.Number(), "id": c.Id}, ErrNumberTaken},
	} {
		var id string
		err := app.DB().Select("id").From(Collection).Where(dbx.NewExp(other.where, other.params)).Limit(1).Row(&id)
		switch {
		case err == nil:
			return other.taken
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
	}
	return nil
}

// nextNumber is the number a category saved without one gets: the next
// after every number a category or a pet uses.
func nextNumber(app core.App) (int64, error) {
	var last int64
	err := app.DB().NewQuery(`SELECT CAST(COALESCE(MAX(n), 0) AS INTEGER) FROM (
		SELECT MAX(number) AS n FROM categories UNION ALL SELECT MAX(categoryId) FROM pets)`).Row(&last)
	if err != nil {
		return 0, err
	}
	if last >= MaxNumber {
		return 0, ErrNumberInvalid
	}
	return last + 1, nil
}

// petsCarrying is how many pets carry number as their categoryId.
func petsCarrying(app core.App, number int64) (int64, error) {
	var n int64
	err := app.DB().NewQuery("SELECT COUNT(*) FROM pets WHERE categoryId = {:number}").
		Bind(dbx.Params{"number": number}).Row(&n)
	return n, err
}

// Find is the category with number.
func Find(app core.App, number int64) (*Record, error) {
	r, err := app.FindFirstRecordByFilter(Collection, "number = {:number}", dbx.Params{"number": number})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return &Record{r}, nil
}

// Create saves a category, by, with number (0: the one after the highest in use) and name,
// and its audit record in one transaction.
func Create(app core.App, number int64, name, description string, by audit.Actor) (*Record, error) {
	collection, err := app.FindCachedCollectionByNameOrId(Collection)
	if err != nil {
		return nil, err
	}
	c := &Record{core.NewRecord(collection)}
	if number != 0 {
		c.Set(NumberField, number)
	}
	c.Set(NameField, name)
	c.Set(DescriptionField, description)
	err = app.RunInTransaction(func(tx core.App) error {
		if err := tx.Save(c); err != nil {
			return err
		}
		return writeAudit(tx, audit.CategoryCreated, c.Number(), "", c.Name(), by)
	})
	return c, err
}

// Rename gives the category with number a new name, by, with its audit
// record in one transaction. A name that is the same is no change.
func Rename(app core.App, number int64, name string, by audit.Actor) (*Record, error) {
	var c *Record
	err := app.RunInTransaction(func(tx core.App) error {
		var err error
		if c, err = Find(tx, number); err != nil {
			return err
		}
		old := c.Name()
		c.Set(NameField, name)
		if err := tx.Save(c); err != nil {
			return err
		}
		return writeRename(tx, c, old, by)
	})
	return c, err
}

// Delete deletes the category with number, by, with its audit record in one
// transaction; refused while pets carry it.
func Delete(app core.App, number int64, by audit.Actor) error {
	return app.RunInTransaction(func(tx core.App) error {
		c, err := Find(tx, number)
		if err != nil {
			return err
		}
		if err := tx.Delete(c); err != nil {
			return err
		}
		return writeAudit(tx, audit.CategoryDeleted, c.Number(), c.Name(), "", by)
	})
}

// writeRename writes the rename of c from old, if its name changed.
func writeRename(tx core.App, c *Record, old string, by audit.Actor) error {
	if c.Name() == old {
		return nil
	}
	return writeAudit(tx, audit.CategoryRenamed, c.Number(), old, c.Name(), by)
}

// writeAudit writes a category's change to the trail, with tx, the
// change's transaction.
func writeAudit(tx core.App, action audit.Action, number int64, oldName, newName string, by audit.Actor) error {
	name := map[string]any{}
	if oldName != "" {
		name["old"] = oldName
	}
	if newName != "" {
		name["new"] = newName
	}
	return audit.Write(tx, audit.Entry{Action: action, Category: strconv.FormatInt(number, 10), By: by,
		Details: map[string]any{"name": name}})
}
