package apikeys

import (
	"errors"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/fielderr"
	"petstore/internal/strictinput"
)

// The rules every saved key keeps, whoever saves it: the staff routes, the
// `keys` command, or the dashboard (through the record hooks, which call
// CheckRecord).
const (
	// maxNameLen bounds a name, in characters.
	maxNameLen = 100
	// MaxPerMinute and MaxPerDay bound a key's own quotas: far above what a
	// server serves, so that "never binds" is expressible, and exact in
	// PocketBase's number fields.
	MaxPerMinute = 1_000_000_000
	MaxPerDay    = 1_000_000_000_000
)

// Errors that are the caller's mistake, not the store's: callers may show
// their messages as they are.
var (
	// ErrNotFound: no key has the given record id.
	ErrNotFound = errors.New("no API key")
	// ErrUnknownPlan: no plan has the given name (a *fielderr.Error about
	// the plan).
	ErrUnknownPlan = &fielderr.Kind{Code: "validation_unknown_plan"}
	// ErrBadSettings: a key's settings break a rule (a *fielderr.Error that
	// says which, about the api_keys field it names).
	ErrBadSettings = &fielderr.Kind{Code: "validation_api_key_rule"}
	// ErrState: the key's state rules the action out (a revoked key cannot
	// be rolled, an expired one neither); the *fielderr.Error says why.
	ErrState = &fielderr.Kind{Code: "validation_api_key_rule", Conflict: true}
)

func badSettings(field, format string, a ...any) error {
	return fielderr.New(ErrBadSettings, field, format, a...)
}

func badState(field, format string, a ...any) error {
	return fielderr.New(ErrState, field, format, a...)
}

// revocationFinal is the message for any attempt to clear `revoked`.
const revocationFinal = "a revoked key stays revoked: revocation cannot be undone. Issue a new key on the staff page (/staff/) or with 'petstore keys create'"

// checkName returns name as it is stored (without surrounding spaces), or
// why it cannot be one: a name is required, at most maxNameLen characters,
// and free of control and text-direction characters, which would make it
// print as something else in a terminal or a page.
func checkName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", badSettings(NameField, "a name is required: who uses the key, e.g. the shop's website")
	case !utf8.ValidString(name):
		return "", badSettings(NameField, "a name must be UTF-8 text")
	case utf8.RuneCountInString(name) > maxNameLen:
		return "", badSettings(NameField, "a name has at most %d characters", maxNameLen)
	}
	for _, r := range name {
		if strictinput.Unprintable(r) {
			return "", badSettings(NameField, "a name cannot hold control, text-direction or invisible characters (it holds U+%04X)", r)
		}
	}
	return name, nil
}

// checkOwnQuotas checks a key's own quotas, 0 meaning the plan's.
func checkOwnQuotas(perMinute, perDay int64) error {
	switch {
	case perMinute < 0:
		return badSettings(PerMinuteField, "quotas must be positive, or 0 for the plan's")
	case perDay < 0:
		return badSettings(PerDayField, "quotas must be positive, or 0 for the plan's")
	case perMinute > MaxPerMinute:
		return badSettings(PerMinuteField, "a per-minute quota is at most %d", MaxPerMinute)
	case perDay > MaxPerDay:
		return badSettings(PerDayField, "a per-day quota is at most %d", int64(MaxPerDay))
	}
	return nil
}

// checkQuotaOrder checks that a key's effective per-minute quota (its own,
// else its plan's) is not above its effective per-day quota: a minute
// allowing more than the whole day promises what the day refuses.
func checkQuotaOrder(perMinute, perDay int64, plan *Plan) error {
	minute, minuteWhose := effective(perMinute, plan.PerMinute())
	day, dayWhose := effective(perDay, plan.PerDay())
	if minute > day {
		return badSettings(PerMinuteField, "the per-minute quota, %d (%s), is above the per-day quota, %d (%s): a key may not do more in a minute than in a day",
			minute, minuteWhose, day, dayWhose)
	}
	return nil
}

func effective(own, plans int64) (int64, string) {
	if own > 0 {
		return own, "the key's own"
	}
	return plans, "the plan's"
}

// CheckRecord checks an api_keys record about to be saved against the
// stored one (none when new) and normalises it: revocation is final, and
// the name, the quotas, the plan and the scopes (known ones, at least one,
// in Scopes' order) keep the rules above when they change.
// What is unchanged is not checked again, so a key saved before a rule
// existed can still be revoked, rolled or renamed.
func CheckRecord(app core.App, k *APIKey) error {
	k.normalizeRevoked()
	stored := k.Stored()
	if !k.IsNew() && stored.Revoked() && !k.Revoked() {
		return badState(RevokedField, revocationFinal)
	}
	perMinute, perDay := k.PerMinute(), k.PerDay()
	quotasChanged := k.IsNew() || k.PlanID() != stored.PlanID() ||
		perMinute != stored.PerMinute() || perDay != stored.PerDay()
	if quotasChanged {
		if err := checkOwnQuotas(perMinute, perDay); err != nil {
			return err
		}
	}
	if k.IsNew() || k.Name() != stored.Name() {
		name, err := checkName(k.Name())
		if err != nil {
			return err
		}
		k.SetName(name)
	}
	if k.IsNew() || !slices.Equal(k.Scopes(), stored.Scopes()) {
		scopes, err := normalizeScopes(k.Scopes())
		if err != nil {
			return err
		}
		k.setScopes(scopes)
	}
	if quotasChanged {
		plan, err := findPlanByID(app, k.PlanID())
		if err != nil {
			return err
		}
		return checkQuotaOrder(perMinute, perDay, plan)
	}
	return nil
}

// CheckPlan checks a plan record about to be saved: its per-minute quota is
// not above its per-day quota, and no key on it ends up with an effective
// per-minute quota above its effective per-day quota.
func CheckPlan(app core.App, plan *Plan) error {
	perMinute, perDay := plan.PerMinute(), plan.PerDay()
	if perMinute > perDay {
		return badSettings(planPerMinuteField, "the per-minute quota, %d, is above the per-day quota, %d: a key may not do more in a minute than in a day", perMinute, perDay)
	}
	if plan.IsNew() {
		return nil
	}
	var clashes int
	err := app.DB().NewQuery(planClashSQL).
		Bind(dbx.Params{"planId": plan.Id, "perMinute": perMinute, "perDay": perDay}).Row(&clashes)
	if err != nil {
		return err
	}
	if clashes > 0 {
		return badSettings(planPerDayField, "%d key(s) on this plan would get a per-minute quota above their per-day quota: change their own quotas on the staff page first", clashes)
	}
	return nil
}
