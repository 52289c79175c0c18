package apikeys

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/types"
)

// Collection is the name of the collection that holds the keys.
const Collection = "api_keys"

// The fields of api_keys. This file and the migrations are the only places
// that name them: the rest of petstore reads and writes a key through
// APIKey's methods, and its SQL is below.
const (
	NameField      = "name"
	PlanField      = "plan" // a relation to plans
	HashField      = "key_hash"
	PrefixField    = "prefix"
	RevokedField   = "revoked" // a select field: empty, or RevokedValue
	ExpiresField   = "expires"
	PerMinuteField = "per_minute"
	PerDayField    = "per_day"
	ScopesField    = "scopes"   // a select field of Scopes, at least one
	CustomerField  = "customer" // a relation to customers; empty: none
	// Written by the service only (see KeepServiceFields).
	BannedUntilField    = "banned_until"
	BanLiftedField      = "ban_lifted"
	LastUsedField       = "last_used"
	PreviousHashField   = "previous_hash"
	PreviousPrefixField = "previous_prefix"
	PreviousUntilField  = "previous_until"
	// PocketBase's autodate fields.
	CreatedField = "created"
	UpdatedField = "updated"
)

// RevokedValue is the one value of `revoked`: the dashboard then shows a
// revoked key as "revoked", not as a green True.
const RevokedValue = "revoked"

// serviceFields are the fields that a dashboard save leaves as stored: those
// only the service writes (the key's hashes and prefixes, the ban, its last
// use), and those that change only through an explicit action (Change: the
// staff page, its PATCH route, the keys command): the expiry and the scopes.
var serviceFields = []string{
	HashField, PrefixField, PreviousHashField, PreviousPrefixField, PreviousUntilField,
	BannedUntilField, BanLiftedField, LastUsedField, ExpiresField, ScopesField,
}

var (
	_ core.RecordProxy  = (*APIKey)(nil)
	_ core.PreValidator = (*APIKey)(nil)
)

// APIKey is a record of the api_keys collection, read and written through
// its methods (a record proxy, as PocketBase's core.MFA).
type APIKey struct {
	*core.Record
}

// newAPIKey is a new, unsaved key record.
func newAPIKey(app core.App) (*APIKey, error) {
	collection, err := app.FindCachedCollectionByNameOrId(Collection)
	if err != nil {
		return nil, err
	}
	return &APIKey{core.NewRecord(collection)}, nil
}

// ProxyRecord returns the proxied record.
func (k *APIKey) ProxyRecord() *core.Record { return k.Record }

// SetProxyRecord loads record into the proxy.
func (k *APIKey) SetProxyRecord(record *core.Record) { k.Record = record }

// PreValidate checks that the proxy holds an api_keys record.
func (k *APIKey) PreValidate(context.Context, core.App) error {
	if k.Record == nil || k.Collection().Name != Collection {
		return errors.New("missing or invalid api_keys proxy record")
	}
	return nil
}

// Stored is the key as it was loaded, before any change made since.
func (k *APIKey) Stored() *APIKey { return &APIKey{k.Original()} }

// Name is who uses the key.
func (k *APIKey) Name() string { return k.GetString(NameField) }

// SetName sets who uses the key.
func (k *APIKey) SetName(name string) { k.Set(NameField, name) }

// PlanID is the record id of the key's plan.
func (k *APIKey) PlanID() string { return k.GetString(PlanField) }

// SetPlanID puts the key on the plan with the given record id.
func (k *APIKey) SetPlanID(id string) { k.Set(PlanField, id) }

// Plan is the key's plan when it was expanded (Get, Search, List), or nil.
func (k *APIKey) Plan() *Plan {
	if p := k.ExpandedOne(PlanField); p != nil {
		return &Plan{p}
	}
	return nil
}

// CustomerID is the record id of the customer the key belongs to; "": none.
func (k *APIKey) CustomerID() string { return k.GetString(CustomerField) }

// SetCustomerID gives the key to the customer with the given record id ("":
// to none). The customers package keeps such a key on its customer's plan.
func (k *APIKey) SetCustomerID(id string) { k.Set(CustomerField, id) }

// Hash is Hash(key) of the key's current secret.
func (k *APIKey) Hash() string { return k.GetString(HashField) }

// Prefix is the start of the key's current secret (DisplayPrefix).
func (k *APIKey) Prefix() string { return k.GetString(PrefixField) }

// setSecret makes key the key's secret. With a previous secret's grace
// period until (zero: none), the secret it replaces keeps working until then.
func (k *APIKey) setSecret(key string, until time.Time) {
	previousHash, previousPrefix, previousUntil := "", "", ""
	if !until.IsZero() {
		previousHash, previousPrefix, previousUntil = k.Hash(), k.Prefix(), dateString(until)
	}
	k.Set(PreviousHashField, previousHash)
	k.Set(PreviousPrefixField, previousPrefix)
	k.Set(PreviousUntilField, previousUntil)
	k.Set(HashField, Hash(key))
	k.Set(PrefixField, DisplayPrefix(key))
}

// Previous is the start of the secret before the last roll and until when
// it works; the zero time when it works no more.
func (k *APIKey) Previous() (prefix string, until time.Time) {
	return k.GetString(PreviousPrefixField), k.GetDateTime(PreviousUntilField).Time()
}

// Revoked reports whether the key is revoked.
func (k *APIKey) Revoked() bool { return k.GetString(RevokedField) != "" }

// revoke marks the key as revoked.
func (k *APIKey) revoke() { k.Set(RevokedField, RevokedValue) }

// normalizeRevoked turns the booleans that scripts written for the former
// bool field send ("true", "false", as JSON or form values) into the select
// field's values.
func (k *APIKey) normalizeRevoked() {
	switch k.GetString(RevokedField) {
	case "true", "1", "on":
		k.revoke()
	case "false", "0", "off":
		k.Set(RevokedField, "")
	}
}

// Expires is when the key stops working; the zero time: never.
func (k *APIKey) Expires() time.Time { return k.GetDateTime(ExpiresField).Time() }

// setExpires sets when the key stops working; the zero time: never.
func (k *APIKey) setExpires(t time.Time) {
	if t.IsZero() {
		k.Set(ExpiresField, "")
	} else {
		k.Set(ExpiresField, t)
	}
}

// Expired reports whether the key has expired at now.
func (k *APIKey) Expired(now time.Time) bool {
	expires := k.Expires()
	return !expires.IsZero() && !expires.After(now)
}

// PerMinute is the key's own per-minute quota; 0: the plan's.
func (k *APIKey) PerMinute() int64 { return int64(k.GetInt(PerMinuteField)) }

// SetPerMinute sets the key's own per-minute quota; 0: the plan's.
func (k *APIKey) SetPerMinute(n int64) { k.Set(PerMinuteField, n) }

// PerDay is the key's own per-day quota; 0: the plan's.
func (k *APIKey) PerDay() int64 { return int64(k.GetInt(PerDayField)) }

// SetPerDay sets the key's own per-day quota; 0: the plan's.
func (k *APIKey) SetPerDay(n int64) { k.Set(PerDayField, n) }

// Scopes are what the key may do, in Scopes' order.
func (k *APIKey) Scopes() []Scope {
	names := k.GetStringSlice(ScopesField)
	scopes := make([]Scope, len(names))
	for i, name := range names {
		scopes[i] = Scope(name)
	}
	return scopes
}

// setScopes sets what the key may do (checked by CheckRecord).
func (k *APIKey) setScopes(scopes []Scope) { k.Set(ScopesField, ScopeNames(scopes)) }

// BannedUntil is when the key's ban ends; before now (or zero): not banned.
func (k *APIKey) BannedUntil() time.Time { return k.GetDateTime(BannedUntilField).Time() }

// liftBan ends the key's ban at now, which every instance's limiter reads as
// "forget the rejections counted before".
func (k *APIKey) liftBan(now time.Time) {
	k.Set(BannedUntilField, "")
	k.Set(BanLiftedField, dateString(now))
}

// LastUsed is the key's last request, to the minute; zero: never used.
func (k *APIKey) LastUsed() time.Time { return k.GetDateTime(LastUsedField).Time() }

// Created is when the key was issued.
func (k *APIKey) Created() time.Time { return k.GetDateTime(CreatedField).Time() }

// Key states, as `keys list` shows them.
const (
	StateActive  = "active"
	StateRevoked = "revoked"
	StateExpired = "expired"
	StateBanned  = "banned"
)

// State tells whether the key is usable at now.
func (k *APIKey) State(now time.Time) string {
	switch {
	case k.Revoked():
		return StateRevoked
	case k.Expired(now):
		return StateExpired
	case k.BannedUntil().After(now):
		return StateBanned
	}
	return StateActive
}

// KeepServiceFields sets back, from the stored key, every field that only
// the service writes, the expiry and the scopes. The dashboard's edit form
// sends every field back as it was loaded, so a form opened before a ban, a
// roll, a use, an expiry or a scope change and saved later would otherwise
// lift the ban, undo the roll, turn back the last use or the expiry, or
// widen the scopes.
func (k *APIKey) KeepServiceFields() {
	stored := k.Original()
	for _, field := range serviceFields {
		k.Set(field, stored.Get(field))
	}
}

// dateString is t as PocketBase stores dates.
func dateString(t time.Time) string {
	d, _ := types.ParseDateTime(t) // a time.Time always parses
	return d.String()
}

// The SQL that names api_keys' columns, for what records cannot do cheaply:
// the lookup of every request, and counts, searches and pages over many keys.

// findKeySQL reads a key joined with its plan, by hash: its current secret's,
// or its previous secret's during a roll's grace period. It is one
// statement, prepared once (see Finder).
//
// A key that counts in its customer's windows (countsPerCustomer) reads
// its customer's id, and for its ban the latest ban and lift of the keys
// that share those windows: their ban is one, saved on the key whose
// request banned them, and lifted there.
const findKeySQL = `SELECT k.id, k.revoked <> '' AS revoked, k.expires,
	CASE WHEN ` + countsPerCustomer + ` THEN (SELECT max(o.banned_until) FROM api_keys o WHERE ` + sharesWindows + `) ELSE k.banned_until END,
	CASE WHEN ` + countsPerCustomer + ` THEN (SELECT max(o.ban_lifted) FROM api_keys o WHERE ` + sharesWindows + `) ELSE k.ban_lifted END,
	k.last_used, k.per_minute, k.per_day, k.scopes,
	p.name, p.per_minute AS plan_per_minute, p.per_day AS plan_per_day, p.ban_after, p.ban_minutes,
	k.key_hash <> :hash AS by_previous, k.previous_until,
	CASE WHEN ` + countsPerCustomer + ` THEN k.customer ELSE '' END
	FROM api_keys k JOIN plans p ON p.id = k.plan
	WHERE k.key_hash = :hash OR (k.previous_hash = :hash AND k.previous_until > :now) LIMIT 1`

// countsPerCustomer is the condition on key k and its plan p under which
// the key counts in its customer's windows: its plan counts per customer,
// it has a customer, and it has no quota of its own (a key with one counts
// per key, in windows of its own quota).
const countsPerCustomer = `(p.counted = 'customer' AND k.customer <> '' AND k.per_minute = 0 AND k.per_day = 0)`

// sharesWindows is the condition on key o that counts in the same
// customer's windows as k (which counts per customer): the customer's keys
// on its plan without a quota of their own, revoked ones left out.
const sharesWindows = `o.customer = k.customer AND o.plan = k.plan AND o.per_minute = 0 AND o.per_day = 0 AND o.revoked = ''`

// perCustomerKeysSQL selects the keys that count in their customer's
// windows, with their customer.
const perCustomerKeysSQL = `SELECT k.id, k.customer FROM api_keys k JOIN plans p ON p.id = k.plan
	WHERE k.revoked = '' AND ` + countsPerCustomer

// revokedAgainSQL selects the keys that the audit trail says were revoked
// and that are not (a restored backup's, older than the revocation).
const revokedAgainSQL = `SELECT id FROM api_keys WHERE revoked = ''
	AND id IN (SELECT [[key]] FROM audit_log WHERE action = {:revoked})`

// countByStateSQL counts keys by State's rules, in State's order.
const countByStateSQL = `SELECT CASE
	WHEN revoked <> '' THEN 'revoked'
	WHEN expires <> '' AND expires <= :now THEN 'expired'
	WHEN banned_until > :now THEN 'banned'
	ELSE 'active' END AS state, COUNT(*) FROM api_keys GROUP BY state`

// planClashSQL counts the keys on plan {:planId} whose effective per-minute
// quota would be above their effective per-day quota under the plan's
// quotas {:perMinute} and {:perDay}.
const planClashSQL = `SELECT count(*) FROM api_keys WHERE plan = {:planId}
	AND (CASE WHEN per_minute > 0 THEN per_minute ELSE {:perMinute} END) > (CASE WHEN per_day > 0 THEN per_day ELSE {:perDay} END)`

// Sorts are the orders a page of keys may be in (a name, or a name with "-"
// for the reverse order), each with its ORDER BY terms. Ties go newest
// first, then by id, so that pages neither repeat nor skip a key.
var Sorts = map[string][]string{
	SortNewest:  {"created DESC", "id DESC"},
	"created":   {"created ASC", "id ASC"},
	"name":      {"[[name]] COLLATE NOCASE ASC", "id ASC"},
	"-name":     {"[[name]] COLLATE NOCASE DESC", "id DESC"},
	"-lastUsed": {"last_used DESC", "created DESC", "id DESC"},                      // most recently used first, never used last
	"lastUsed":  {"last_used ASC", "created DESC", "id DESC"},                       // never used first
	"expires":   {"[[expires]] = '' ASC", "expires ASC", "created DESC", "id DESC"}, // soonest first, never last
}

// SortNewest is the order of a page of keys when none is given.
const SortNewest = "-created"

// stateSQL is the condition a key in each state meets at {:now}, as State
// tells it. Dates are stored as text that sorts as time does; an empty one
// sorts first.
var stateSQL = map[string]string{
	StateRevoked: "revoked <> ''",
	StateExpired: "revoked = '' AND expires <> '' AND expires <= {:now}",
	StateBanned:  "revoked = '' AND (expires = '' OR expires > {:now}) AND banned_until > {:now}",
	StateActive:  "revoked = '' AND (expires = '' OR expires > {:now}) AND banned_until <= {:now}",
}

// The conditions of a search: part of a name ({:contains}), the start of a
// current or previous prefix ({:starts}), as LIKE patterns with ESCAPE '\'.
const (
	nameContainsSQL = `name LIKE {:contains} ESCAPE '\'`
	prefixStartsSQL = `prefix LIKE {:starts} ESCAPE '\' OR previous_prefix LIKE {:starts} ESCAPE '\'`
)

// DashboardChange refuses a save from the dashboard (PocketBase's records
// API) that changes one of the fields only the service writes: an error
// about the first such field, saying where it changes, instead of a save
// that reports success and keeps the stored value. formUpdated is the
// `updated` the form sent back ("" when none); it tells a form opened before
// the service's last save of the key (a roll, an expiry or scope change, an
// unban), whose other values are only old, from an edit. Use and bans are
// written without moving `updated`: an older last_used or banned_until is
// an old form's, kept as stored (KeepServiceFields) without a word, except
// while the key is banned, when any other banned_until is refused: staff
// lift a ban on the staff page or with the command, never by clearing it
// here.
func (k *APIKey) DashboardChange(formUpdated string, now time.Time) error {
	stored := k.Stored()
	fresh := formUpdated == "" || formUpdated == stored.GetString(UpdatedField)
	for _, field := range serviceFields {
		sent, was := fieldText(k, field), fieldText(stored, field)
		if sent == was {
			continue
		}
		switch field {
		case LastUsedField:
			if sent < was { // dates as stored: their text sorts as they do
				continue
			}
			return badSettings(field, "last_used is written by the service on the key's use; it cannot be changed here")
		case BannedUntilField:
			if until := stored.BannedUntil(); until.After(now) {
				return badState(field, "the key is banned until %s UTC: lift the ban on the staff page (/staff/) or with 'petstore keys unban %s', "+
					"not here. If you did not change banned_until, the key was banned after this form was opened: reload it", until.UTC().Format("2006-01-02 15:04"), k.Id)
			}
			if sent < was {
				continue
			}
			return badSettings(field, "bans are set by the rate limiter; banned_until cannot be set here")
		}
		if !fresh {
			continue
		}
		return badSettings(field, "%s", dashboardRefusals[field])
	}
	return nil
}

// dashboardRefusals says, for each field only the service writes through a
// save of the record, why the dashboard cannot change it and what can.
var dashboardRefusals = map[string]string{
	HashField:           "key_hash is the hash of the key's secret; it cannot be changed here. Roll the key for a new secret on the staff page (/staff/) or with 'petstore keys roll ID'",
	PrefixField:         "prefix is the start of the key's secret; it cannot be changed here. Roll the key for a new secret on the staff page (/staff/) or with 'petstore keys roll ID'",
	PreviousHashField:   "previous_hash is written by a roll; it cannot be changed here",
	PreviousPrefixField: "previous_prefix is written by a roll; it cannot be changed here",
	PreviousUntilField:  "previous_until is set when the key is rolled; it cannot be changed here. Roll again with no grace to end the old secret at once",
	BanLiftedField:      "ban_lifted is written when a ban is lifted; it cannot be changed here",
	ExpiresField:        "the expiry cannot be changed here: change it on the staff page (/staff/) or with 'petstore keys expire ID'",
	ScopesField:         "scopes cannot be changed here: change them on the staff page (/staff/)",
}

// fieldText is a field's value as text, to compare what a form sent with
// what is stored.
func fieldText(k *APIKey, field string) string {
	if field == ScopesField {
		return strings.Join(k.GetStringSlice(field), ",")
	}
	return k.GetString(field)
}
