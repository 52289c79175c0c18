package apikeys

import (
	"database/sql"
	"errors"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/audit"
	"petstore/internal/fielderr"
)

// PlansCollection is the name of the collection of plans, which staff edit
// in the dashboard: their names and quotas are never written into code or
// messages.
const PlansCollection = "plans"

// The fields of plans that keys depend on.
const (
	planNameField       = "name"
	planPerMinuteField  = "per_minute"
	planPerDayField     = "per_day"
	planBanAfterField   = "ban_after"
	planBanMinutesField = "ban_minutes"
	planCountedField    = "counted" // "key" or "customer": whose windows its keys count in
)

// planAuditedFields are the fields of a plan whose changes plan.changed
// records.
var planAuditedFields = []string{planNameField, planPerMinuteField, planPerDayField, planBanAfterField, planBanMinutesField, planCountedField}

// WritePlanAudit writes, with tx (the transaction that saved after from
// before), a plan.changed record with the old and new values of the fields
// that changed (every key on the plan follows its quotas), and nothing when
// none did. Its details name the plan by id and by name.
func WritePlanAudit(tx core.App, before, after *Plan, by audit.Actor) error {
	details := map[string]any{}
	for _, field := range planAuditedFields {
		old, new := before.GetString(field), after.GetString(field)
		if old != new {
			details[field] = map[string]any{"old": old, "new": new}
		}
	}
	if len(details) == 0 {
		return nil
	}
	details["plan"] = map[string]any{"id": after.Id, "name": after.Name()}
	return audit.Write(tx, audit.Entry{Action: audit.PlanChanged, By: by, Details: details})
}

// Plan is a record of the plans collection.
type Plan struct {
	*core.Record
}

// Name is the plan's name, as keys are created with (NewKey.Plan).
func (p *Plan) Name() string { return p.GetString(planNameField) }

// PerMinute is the plan's per-minute quota.
func (p *Plan) PerMinute() int64 { return int64(p.GetInt(planPerMinuteField)) }

// PerDay is the plan's per-day quota.
func (p *Plan) PerDay() int64 { return int64(p.GetInt(planPerDayField)) }

// FindPlan is the plan named name: ErrUnknownPlan, with the names of the
// plans there are, when there is none.
func FindPlan(app core.App, name string) (*Plan, error) {
	if name == "" {
		return nil, planRequired(app, PlanField)
	}
	r, err := app.FindFirstRecordByData(PlansCollection, planNameField, name)
	if errors.Is(err, sql.ErrNoRows) {
		names, err := PlanNames(app)
		if err != nil {
			return nil, err
		}
		return nil, fielderr.New(ErrUnknownPlan, PlanField, "unknown plan %q: the plans are %s", name, names)
	}
	if err != nil {
		return nil, err
	}
	return &Plan{r}, nil
}

// findPlanByID is the plan with the given record id (a key's PlanID).
func findPlanByID(app core.App, id string) (*Plan, error) {
	r, err := app.FindRecordById(PlansCollection, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, planRequired(app, PlanField)
	}
	if err != nil {
		return nil, err
	}
	return &Plan{r}, nil
}

// planRequired is the error for a key without a plan, about field.
func planRequired(app core.App, field string) error {
	names, err := PlanNames(app)
	if err != nil {
		return err
	}
	return badSettings(field, "a plan is required: %s", names)
}

// PlanNames lists the plans' names for a message, smallest quota first:
// "free, pro, business or enterprise".
func PlanNames(app core.App) (string, error) {
	var names []string
	err := app.RecordQuery(PlansCollection).Select(planNameField).
		OrderBy(planPerDayField, planPerMinuteField, planNameField).Column(&names)
	if err != nil {
		return "", err
	}
	if len(names) == 0 {
		return "none yet: add one in the dashboard (/_/)", nil
	}
	return listOf(names, "or"), nil
}
