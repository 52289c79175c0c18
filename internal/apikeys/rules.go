package apikeys

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pocketbase/pocketbase/core"
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
	// ErrUnknownPlan: no plan has the given name.
	ErrUnknownPlan = errors.New("unknown plan")
	// ErrBadSettings: a key's settings break a rule; the message says which
	// (and Field which field).
	ErrBadSettings = errors.New("bad API key settings")
	// ErrState: the key's state rules the action out (a revoked key cannot
	// be rolled, an expired one neither); the message says why.
	ErrState = errors.New("the API key's state rules it out")
)

// ruleError is an ErrBadSettings or an ErrState with its own message, about
// one api_keys field.
type ruleError struct {
	field string
	kind  error
	msg   string
}

func (e *ruleError) Error() string        { return e.msg }
func (e *ruleError) Is(target error) bool { return target == e.kind }

func badSettings(field, format string, a ...any) error {
	return &ruleError{field, ErrBadSettings, fmt.Sprintf(format, a...)}
}

func badState(field, format string, a ...any) error {
	return &ruleError{field, ErrState, fmt.Sprintf(format, a...)}
}

// Field is the api_keys field that err (an ErrBadSettings or ErrState) is
// about, or "".
func Field(err error) string {
	var re *ruleError
	if errors.As(err, &re) {
		return re.field
	}
	return ""
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
		return "", badSettings("name", "a name is required: who uses the key, e.g. the shop's website")
	case !utf8.ValidString(name):
		return "", badSettings("name", "a name must be UTF-8 text")
	case utf8.RuneCountInString(name) > maxNameLen:
		return "", badSettings("name", "a name has at most %d characters", maxNameLen)
	}
	for _, r := range name {
		if unprintable(r) {
			return "", badSettings("name", "a name cannot hold control or text-direction characters (it holds U+%04X)", r)
		}
	}
	return name, nil
}

// unprintable reports whether r would change how the text around it
// prints rather than print itself: a control character (NUL, ESC, newline
// ...), a line or paragraph separator, or a bidirectional control (U+202E
// and the like).
func unprintable(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029'
}

// checkOwnQuotas checks a key's own quotas, 0 meaning the plan's.
func checkOwnQuotas(perMinute, perDay int64) error {
	switch {
	case perMinute < 0:
		return badSettings("per_minute", "quotas must be positive, or 0 for the plan's")
	case perDay < 0:
		return badSettings("per_day", "quotas must be positive, or 0 for the plan's")
	case perMinute > MaxPerMinute:
		return badSettings("per_minute", "a per-minute quota is at most %d", MaxPerMinute)
	case perDay > MaxPerDay:
		return badSettings("per_day", "a per-day quota is at most %d", int64(MaxPerDay))
	}
	return nil
}

// checkQuotaOrder checks that a key's effective per-minute quota (its own,
// else its plan's) is not above its effective per-day quota: a minute
// allowing more than the whole day promises what the day refuses.
func checkQuotaOrder(perMinute, perDay int64, plan *core.Record) error {
	minute, minuteWhose := effective(perMinute, plan.GetInt("per_minute"))
	day, dayWhose := effective(perDay, plan.GetInt("per_day"))
	if minute > day {
		return badSettings("per_minute", "the per-minute quota, %d (%s), is above the per-day quota, %d (%s): a key may not do more in a minute than in a day",
			minute, minuteWhose, day, dayWhose)
	}
	return nil
}

func effective(own int64, plans int) (int64, string) {
	if own > 0 {
		return own, "the key's own"
	}
	return int64(plans), "the plan's"
}

// CheckRecord checks an api_keys record about to be saved against the
// stored one (none when new) and normalises it: revocation is final, and
// the name, the quotas and the plan keep the rules above when they change.
// What is unchanged is not checked again, so a key saved before a rule
// existed can still be revoked, rolled or renamed.
func CheckRecord(app core.App, r *core.Record) error {
	normalizeRevoked(r)
	stored := r.Original()
	if !r.IsNew() && IsRevoked(stored) && !IsRevoked(r) {
		return badState(RevokedField, revocationFinal)
	}
	perMinute, perDay := int64(r.GetInt("per_minute")), int64(r.GetInt("per_day"))
	quotasChanged := r.IsNew() || r.GetString("plan") != stored.GetString("plan") ||
		perMinute != int64(stored.GetInt("per_minute")) || perDay != int64(stored.GetInt("per_day"))
	if quotasChanged {
		if err := checkOwnQuotas(perMinute, perDay); err != nil {
			return err
		}
	}
	if r.IsNew() || r.GetString("name") != stored.GetString("name") {
		name, err := checkName(r.GetString("name"))
		if err != nil {
			return err
		}
		r.Set("name", name)
	}
	if quotasChanged {
		plan, err := app.FindRecordById("plans", r.GetString("plan"))
		if errors.Is(err, sql.ErrNoRows) {
			return badSettings("plan", "a plan is required: free, pro, business or enterprise")
		}
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
func CheckPlan(app core.App, plan *core.Record) error {
	perMinute, perDay := plan.GetInt("per_minute"), plan.GetInt("per_day")
	if perMinute > perDay {
		return badSettings("per_minute", "the per-minute quota, %d, is above the per-day quota, %d: a key may not do more in a minute than in a day", perMinute, perDay)
	}
	if plan.IsNew() {
		return nil
	}
	var clashes int
	err := app.DB().NewQuery(`SELECT count(*) FROM ` + Collection + ` WHERE plan = {:plan}
		AND (CASE WHEN per_minute > 0 THEN per_minute ELSE {:perMinute} END) > (CASE WHEN per_day > 0 THEN per_day ELSE {:perDay} END)`).
		Bind(map[string]any{"plan": plan.Id, "perMinute": perMinute, "perDay": perDay}).Row(&clashes)
	if err != nil {
		return err
	}
	if clashes > 0 {
		return badSettings("per_day", "%d key(s) on this plan would get a per-minute quota above their per-day quota: change their own quotas on the staff page first", clashes)
	}
	return nil
}

// The api_keys field `revoked` is a select field: empty, or RevokedValue.
// The dashboard then shows a revoked key as "revoked", not as a green True.
const (
	RevokedField = "revoked"
	RevokedValue = "revoked"
)

// IsRevoked reports whether r is revoked.
func IsRevoked(r *core.Record) bool {
	return r.GetString(RevokedField) != ""
}

// normalizeRevoked turns the booleans that scripts written for the former
// bool field send ("true", "false", as JSON or form values) into the select
// field's values.
func normalizeRevoked(r *core.Record) {
	switch r.GetString(RevokedField) {
	case "true", "1", "on":
		r.Set(RevokedField, RevokedValue)
	case "false", "0", "off":
		r.Set(RevokedField, "")
	}
}

// expired reports whether r has expired at now.
func expired(r *core.Record, now time.Time) bool {
	expires := r.GetDateTime("expires")
	return !expires.IsZero() && !expires.Time().After(now)
}
