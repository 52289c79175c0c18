package staff

import (
	"time"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/apikeys"
	"petstore/internal/usage"
)

// keyView is a key as the staff page shows it; never the key itself.
type keyView struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Prefix string `json:"prefix"` // the first characters of the key
	Plan   string `json:"plan"`
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
}

// quotaView is a quota and whose it is: the key's own, or its plan's.
type quotaView struct {
	Value int64 `json:"value"`
	Own   bool  `json:"own"`
}

// todayView is a key's requests on the current UTC day: served, and
// refused with 429.
type todayView struct {
	Served  int64 `json:"served"`
	Refused int64 `json:"refused"`
}

func todayOf(c usage.Counts) todayView {
	return todayView{Served: c.Served(), Refused: c.Limited}
}

type previousView struct {
	Prefix string    `json:"prefix"`
	Until  time.Time `json:"until"`
}

// viewOf is r (with its plan expanded) as seen at now.
func viewOf(r *core.Record, now time.Time) keyView {
	v := keyView{
		ID:      r.Id,
		Name:    r.GetString("name"),
		Prefix:  r.GetString(apikeys.PrefixField),
		State:   apikeys.State(r, now),
		Expires: timeOf(r, apikeys.ExpiresField),
		Created: r.GetDateTime("created").Time(),
	}
	if plan := r.ExpandedOne("plan"); plan != nil {
		v.Plan = plan.GetString("name")
		v.PerMinute = quotaOf(r, plan, "per_minute")
		v.PerDay = quotaOf(r, plan, "per_day")
	}
	if v.State == apikeys.StateBanned {
		v.BannedUntil = timeOf(r, apikeys.BannedUntilField)
	}
	v.LastUsed = timeOf(r, "last_used")
	if until := timeOf(r, apikeys.PreviousUntilField); until != nil && until.After(now) && v.State != apikeys.StateRevoked {
		v.Previous = &previousView{Prefix: r.GetString(apikeys.PreviousPrefixField), Until: *until}
	}
	return v
}

func quotaOf(key, plan *core.Record, field string) quotaView {
	if own := key.GetInt(field); own > 0 {
		return quotaView{Value: int64(own), Own: true}
	}
	return quotaView{Value: int64(plan.GetInt(field))}
}

// timeOf is a date field in UTC, or nil when empty.
func timeOf(r *core.Record, field string) *time.Time {
	d := r.GetDateTime(field)
	if d.IsZero() {
		return nil
	}
	t := d.Time().UTC()
	return &t
}
