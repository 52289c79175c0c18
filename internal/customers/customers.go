// Package customers is who the plans are sold to: a customer has a name,
// unique whatever the letter case, a contact e-mail, notes and a plan, and
// owns keys, each key at most one customer.
//
// A customer's plan is the plan of each of its keys: a key given to a
// customer moves to the customer's plan, and a change of the customer's
// plan moves every key of it, in one transaction, each move in the key's
// audit trail beside the customer's change. A key's own quotas, where set,
// still win over the plan's, as for any key. The plan says whose windows
// its keys count in (plans.counted): each key its own, or, per customer,
// the customer's, shared by its keys without a quota of their own
// (docs/customers.md). Because the plan stays on the key, the request path
// reads a key, its plan and its customer in one lookup, and a key without
// a customer works as before.
//
// Staff create and change customers, and give them keys, on the staff
// page, with the customers command and in the dashboard; every path keeps
// the same rules (Bind) and writes each change to the audit trail in its
// transaction.
package customers

import (
	"database/sql"
	"errors"
	"strings"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/internal/fielderr"
	"petstore/internal/strictinput"
)

// Collection is the PocketBase collection of customers.
const Collection = "customers"

// The fields of customers. This file and the migrations are the only places
// that name them.
const (
	NameField    = "name"
	ContactField = "contact" // an e-mail address; may be empty
	NotesField   = "notes"
	PlanField    = "plan" // a relation to plans
)

// auditedFields are the fields whose changes customer.changed records.
var auditedFields = []string{NameField, ContactField, NotesField, PlanField}

// Record is a record of the customers collection, read and written through
// its methods (a record proxy, as PocketBase's core.MFA).
type Record struct {
	*core.Record
}

var _ core.RecordProxy = (*Record)(nil)

// ProxyRecord returns the proxied record.
func (c *Record) ProxyRecord() *core.Record { return c.Record }

// SetProxyRecord loads record into the proxy.
func (c *Record) SetProxyRecord(record *core.Record) { c.Record = record }

// Name is the customer's name.
func (c *Record) Name() string { return c.GetString(NameField) }

// Contact is the customer's contact e-mail; "": none.
func (c *Record) Contact() string { return c.GetString(ContactField) }

// Notes are staff's notes about the customer.
func (c *Record) Notes() string { return c.GetString(NotesField) }

// PlanID is the record id of the customer's plan.
func (c *Record) PlanID() string { return c.GetString(PlanField) }

// ErrNotFound is the error for an id or a name that no customer has.
var ErrNotFound = errors.New("no customer has this id or name")

// errRule is the kind of a refusal by the customers' rules of a value;
// errConflict of one that the other records rule out (a name taken, keys
// that still belong to the customer).
var (
	errRule     = &fielderr.Kind{Code: "validation_customer_rule"}
	errConflict = &fielderr.Kind{Code: "validation_customer_rule", Conflict: true}
)

// The refusals of the rules, each about the field it names.
var (
	ErrNameTaken = &fielderr.Error{Field: NameField, Kind: errConflict,
		Message: "the name is taken: another customer has this name (names are compared without regard to letter case)"}
	ErrUnprintable = &fielderr.Error{Field: NameField, Kind: errRule,
		Message: "the name cannot hold control, text-direction or invisible characters (newline, U+202E, U+200B and the like)"}
)

// hasKeys refuses the deletion of customer c, which n keys belong to.
func hasKeys(c *Record, n int64) error {
	return fielderr.New(errConflict, "", "customer %s has %d key(s), revoked ones included: give them to another customer or to none first, so that their history keeps its owner",
		c.Name(), n)
}

// notOnPlan refuses a key of customer c on another plan than c's.
func notOnPlan(c *Record, plan string) error {
	return fielderr.New(apikeys.ErrBadSettings, apikeys.PlanField,
		"the key belongs to customer %s, whose plan is %s: a customer's keys are on its plan. Change the customer's plan, or take the key from the customer first",
		c.Name(), plan)
}

// Name is name as it is stored: without surrounding spaces.
func Name(name string) string { return strings.TrimSpace(name) }

// check applies the rules every saved customer keeps that its fields do
// not: a printable name, unique whatever the letter case (the unique index
// compares ASCII letters without case; this check tells which field).
func check(app core.App, c *Record) error {
	name := c.Name()
	if strings.ContainsFunc(name, strictinput.Unprintable) {
		return ErrUnprintable
	}
	var id string
	err := app.DB().Select("id").From(Collection).
		Where(dbx.NewExp("lower(name) = lower({:name}) AND id != {:id}", dbx.Params{"name": name, "id": c.Id})).Limit(1).Row(&id)
	switch {
	case err == nil:
		return ErrNameTaken
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	return nil
}

// checkKey applies the rule every saved key with a customer keeps: it is on
// its customer's plan.
func checkKey(app core.App, k *apikeys.APIKey) error {
	if k.CustomerID() == "" {
		return nil
	}
	stored := k.Stored()
	if !k.IsNew() && k.CustomerID() == stored.CustomerID() && k.PlanID() == stored.PlanID() {
		return nil
	}
	c, err := Find(app, k.CustomerID())
	if err != nil {
		return err
	}
	if c.PlanID() == k.PlanID() {
		return nil
	}
	plan, err := planName(app, c.PlanID())
	if err != nil {
		return err
	}
	return notOnPlan(c, plan)
}

// keysOf counts the keys of the customer with the given record id, revoked
// ones included.
func keysOf(app core.App, id string) (int64, error) {
	var n int64
	err := app.DB().Select("count(*)").From(apikeys.Collection).
		Where(dbx.HashExp{apikeys.CustomerField: id}).Row(&n)
	return n, err
}

// Find is the customer with the given record id or, failing that, name
// (without regard to letter case).
func Find(app core.App, ref string) (*Record, error) {
	r, err := app.FindRecordById(Collection, ref)
	if errors.Is(err, sql.ErrNoRows) {
		r = &core.Record{}
		err = app.RecordQuery(Collection).AndWhere(dbx.NewExp("lower(name) = lower({:name})", dbx.Params{"name": Name(ref)})).Limit(1).One(r)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return &Record{r}, nil
}

// planName is the name of the plan with the given record id.
func planName(app core.App, id string) (string, error) {
	r, err := app.FindRecordById(apikeys.PlansCollection, id)
	if err != nil {
		return "", err
	}
	return (&apikeys.Plan{Record: r}).Name(), nil
}

// Input is a customer's fields as staff give them: the plan by name. In a
// change, nil leaves a field as it is.
type Input struct {
	Name, Contact, Notes, Plan *string
}

// apply sets in's fields on c.
func (in Input) apply(app core.App, c *Record) error {
	if in.Plan != nil {
		plan, err := apikeys.FindPlan(app, *in.Plan)
		if err != nil {
			return planField(err)
		}
		c.Set(PlanField, plan.Id)
	}
	for field, v := range map[string]*string{NameField: in.Name, ContactField: in.Contact, NotesField: in.Notes} {
		if v != nil {
			c.Set(field, *v)
		}
	}
	return nil
}

// planField is FindPlan's refusal about the customer's plan field (it
// names the keys' field, which is spelled the same).
func planField(err error) error {
	var refused *fielderr.Error
	if errors.As(err, &refused) {
		return fielderr.New(refused.Kind, PlanField, "%s", refused.Message)
	}
	return err
}

// Create saves a customer, by, and its audit record in one transaction. A
// name and a plan are required.
func Create(app core.App, in Input, by audit.Actor) (*Record, error) {
	collection, err := app.FindCachedCollectionByNameOrId(Collection)
	if err != nil {
		return nil, err
	}
	c := &Record{core.NewRecord(collection)}
	if in.Plan == nil {
		in.Plan = new(string)
	}
	if err := in.apply(app, c); err != nil {
		return nil, err
	}
	err = app.RunInTransaction(func(tx core.App) error {
		if err := tx.Save(c); err != nil {
			return err
		}
		return writeWhole(tx, c, audit.CustomerCreated, by)
	})
	return c, err
}

// Change applies in to the customer ref (an id or a name), by, in one
// transaction with its audit record; a new plan moves every key of the
// customer to it in the same transaction (MoveKeys). A change that changes
// nothing writes nothing.
func Change(app core.App, ref string, in Input, by audit.Actor) (*Record, error) {
	var c *Record
	err := app.RunInTransaction(func(tx core.App) error {
		var err error
		if c, err = Find(tx, ref); err != nil {
			return err
		}
		if err := in.apply(tx, c); err != nil {
			return err
		}
		before := &Record{c.Original()}
		if err := tx.Save(c); err != nil {
			return err
		}
		return Changed(tx, before, c, by)
	})
	return c, err
}

// Changed does, with tx (the transaction that saved after from before),
// what a customer's change implies: its keys moved to a new plan, and its
// audit record (none when nothing audited changed).
func Changed(tx core.App, before, after *Record, by audit.Actor) error {
	details := map[string]any{}
	for _, field := range auditedFields {
		old, new := before.GetString(field), after.GetString(field)
		if old == new {
			continue
		}
		if field == PlanField {
			var err error
			if old, err = planName(tx, old); err != nil {
				return err
			}
			if new, err = planName(tx, new); err != nil {
				return err
			}
			moved, err := MoveKeys(tx, after, by)
			if err != nil {
				return err
			}
			details["keys"] = moved
		}
		details[field] = map[string]any{"old": old, "new": new}
	}
	if len(details) == 0 {
		return nil
	}
	return audit.Write(tx, audit.Entry{Action: audit.CustomerChanged, Customer: after.Id, By: by, Details: details})
}

// MoveKeys puts every key of c on c's plan, with tx, each move audited as
// the key's quota change; it returns the ids of the keys it moved.
// Revoked keys stay as they are: they no longer have limits.
func MoveKeys(tx core.App, c *Record, by audit.Actor) ([]string, error) {
	var ids []string
	err := tx.DB().Select("id").From(apikeys.Collection).
		Where(dbx.HashExp{apikeys.CustomerField: c.Id, apikeys.RevokedField: ""}).
		AndWhere(dbx.Not(dbx.HashExp{apikeys.PlanField: c.PlanID()})).OrderBy("id").Column(&ids)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if _, err := apikeys.Edit(tx, id, by, func(k *apikeys.APIKey) error {
			k.SetPlanID(c.PlanID())
			return nil
		}); err != nil {
			return nil, err
		}
	}
	if ids == nil {
		ids = []string{}
	}
	return ids, nil
}

// Assign gives the key with the given record id to the customer ref (an id
// or a name; "": to no customer), by, in one transaction with the key's
// audit records. A key given to a customer moves to the customer's plan; a
// key taken from its customer keeps the plan it has.
func Assign(app core.App, keyID, ref string, by audit.Actor) (*apikeys.APIKey, error) {
	// Edit takes the write lock before it reads, and the customer is read
	// after it: nobody changes the customer meanwhile.
	return apikeys.Edit(app, keyID, by, func(k *apikeys.APIKey) error {
		if ref == "" {
			k.SetCustomerID("")
			return nil
		}
		c, err := Find(app, ref)
		if err != nil {
			return err
		}
		k.SetCustomerID(c.Id)
		k.SetPlanID(c.PlanID())
		return nil
	})
}

// writeWhole writes the creation or the deletion (action) of c, with tx,
// the change's transaction: the whole customer, its plan by name.
func writeWhole(tx core.App, c *Record, action audit.Action, by audit.Actor) error {
	plan, err := planName(tx, c.PlanID())
	if err != nil {
		return err
	}
	return audit.Write(tx, audit.Entry{Action: action, Customer: c.Id, By: by, Details: map[string]any{
		NameField: c.Name(), ContactField: c.Contact(), NotesField: c.Notes(), PlanField: plan,
	}})
}

// Count is how many customers there are, read on db (the read pool).
func Count(db *sql.DB) (n int64, err error) {
	err = db.QueryRow("SELECT COUNT(*) FROM " + Collection).Scan(&n)
	return n, err
}

// Summary is a customer as lists show it: its plan by name, and how many
// keys it has that are not revoked.
type Summary struct {
	ID      string `json:"id" db:"id"`
	Name    string `json:"name" db:"name"`
	Contact string `json:"contact" db:"contact"`
	Notes   string `json:"notes" db:"notes"`
	Plan    string `json:"plan" db:"plan"`
	Keys    int64  `json:"keys" db:"keys"`
}

// listSQL is every customer with its plan's name and its keys that are not
// revoked, by name.
const listSQL = `SELECT c.id, c.name, c.contact, c.notes, p.name AS plan,
	(SELECT count(*) FROM api_keys k WHERE k.customer = c.id AND k.revoked = '') AS keys
	FROM customers c JOIN plans p ON p.id = c.plan`

// List is every customer, by name without regard to letter case.
func List(app core.App) ([]Summary, error) {
	list := []Summary{}
	err := app.DB().NewQuery(listSQL + " ORDER BY c.name COLLATE NOCASE, c.id").All(&list)
	return list, err
}

// Show is the customer ref (an id or a name) and its keys, newest first,
// each with its plan expanded.
func Show(app core.App, ref string) (Summary, []*apikeys.APIKey, error) {
	c, err := Find(app, ref)
	if err != nil {
		return Summary{}, nil, err
	}
	var s Summary
	if err := app.DB().NewQuery(listSQL + " WHERE c.id = {:id}").Bind(dbx.Params{"id": c.Id}).One(&s); err != nil {
		return s, nil, err
	}
	keys, err := apikeys.OfCustomer(app, c.Id)
	return s, keys, err
}
