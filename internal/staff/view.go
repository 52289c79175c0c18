package staff

import (
	"time"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/internal/usage"
)

// keyView is a key as the staff page shows it; never the key itself.
type keyView struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Prefix string `json:"prefix"` // the first characters of the key
	Plan   string `json:"plan"`
	// Customer is the record id of the customer the key belongs to; "": none.
	Customer string `json:"customer"`
	// State is active, banned, revoked or expired (apikeys.State).
	State       string     `json:"state"`
	BannedUntil *time.Time `json:"bannedUntil"` // while banned
	Expires     *time.Time `json:"expires"`     // null: never
	PerMinute   quotaView  `json:"perMinute"`
	PerDay      quotaView  `json:"perDay"`
	// Today is the key's use on the current UTC day, the day PerDay
	// limits (in the list only).
	Today    todayView  `json:"today"`
	LastUsed *time.Time `json:"lastUsed"` // to the minute
	Created  time.Time  `json:"created"`
	// Previous is the secret before the last roll, while it still works.
	Previous *previousView `json:"previous"`
	// Scopes are what the key may do, in apikeys.Scopes' order.
	Scopes []string `json:"scopes"`
}

// quotaView is a quota and whose it is: the key's own, or its plan's.
type quotaView struct {
	Value int64 `json:"value"`
	Own   bool  `json:"own"`
}

// todayView is a key's requests on the current UTC day: served (admitted
// by the limits, whatever their answer: what PerDay counts), and refused
// with 429.
type todayView struct {
	Served  int64 `json:"served"`
	Refused int64 `json:"refused"`
}

func todayOf(c usage.Counts) todayView {
	return todayView{Served: c.Admitted(), Refused: c.Limited}
}

type previousView struct {
	Prefix string    `json:"prefix"`
	Until  time.Time `json:"until"`
}

// viewOf is k (with its plan expanded) as seen at now.
func viewOf(k *apikeys.APIKey, now time.Time) keyView {
	v := keyView{
		ID:       k.Id,
		Name:     k.Name(),
		Prefix:   k.Prefix(),
		State:    k.State(now),
		Expires:  utcOrNil(k.Expires()),
		Created:  k.Created(),
		Scopes:   apikeys.ScopeNames(k.Scopes()),
		Customer: k.CustomerID(),
	}
	if plan := k.Plan(); plan != nil {
		v.Plan = plan.Name()
		v.PerMinute = quotaOf(k.PerMinute(), plan.PerMinute())
		v.PerDay = quotaOf(k.PerDay(), plan.PerDay())
	}
	if v.State == apikeys.StateBanned {
		v.BannedUntil = utcOrNil(k.BannedUntil())
	}
	v.LastUsed = utcOrNil(k.LastUsed())
	if prefix, until := k.Previous(); until.After(now) && v.State != apikeys.StateRevoked {
		v.Previous = &previousView{Prefix: prefix, Until: until.UTC()}
	}
	return v
}

// quotaOf is a key's quota: its own when set, else its plan's.
func quotaOf(own, plans int64) quotaView {
	if own > 0 {
		return quotaView{Value: own, Own: true}
	}
	return quotaView{Value: plans}
}

// utcOrNil is t in UTC, or nil when zero.
func utcOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// historyList is a page of a key's or webhook endpoint's audit trail, newest first, in
// PocketBase's list shape.
type historyList struct {
	Page       int           `json:"page"`
	PerPage    int           `json:"perPage"`
	TotalItems int           `json:"totalItems"`
	TotalPages int           `json:"totalPages"`
	Items      []historyView `json:"items"`
}

// historyView is one change of a key or endpoint, as the trail holds it.
type historyView struct {
	ID     string `json:"id"`
	Action string `json:"action"`
	// Actor is a superuser's record id (with ActorEmail), "cli" or "system".
	Actor      string         `json:"actor"`
	ActorEmail string         `json:"actorEmail"`
	Address    string         `json:"address"` // the client's, for a change over HTTP
	Details    map[string]any `json:"details"` // the values before and after
	Created    time.Time      `json:"created"`
}

func historyOf(e audit.Recorded) historyView {
	return historyView{
		ID: e.ID, Action: string(e.Action), Actor: e.By.ID, ActorEmail: e.By.Email, Address: e.By.Address,
		Details: e.Details, Created: e.Created.UTC(),
	}
}
