package limits

import (
	"time"

	"github.com/pocketbase/pocketbase/core"
)

// Quota is what one API key may do.
type Quota struct {
	PerMinute, PerDay int64
	// BanAfter rejected requests within one minute window ban the key for
	// BanFor. BanFor 0 disables bans.
	BanAfter int64
	BanFor   time.Duration
}

// QuotaFor reads the quota of an api_keys record: its own per_minute and
// per_day when set, else its plan's. It reads the plan on every call, so that
// staff edits in the dashboard apply to the next request.
func QuotaFor(app core.App, key *core.Record) (Quota, error) {
	plan, err := app.FindRecordById("plans", key.GetString("plan"))
	if err != nil {
		return Quota{}, err
	}
	q := Quota{
		PerMinute: firstPositive(key.GetInt("per_minute"), plan.GetInt("per_minute")),
		PerDay:    firstPositive(key.GetInt("per_day"), plan.GetInt("per_day")),
		BanAfter:  int64(plan.GetInt("ban_after")),
		BanFor:    time.Duration(plan.GetInt("ban_minutes")) * time.Minute,
	}
	if q.BanAfter <= 0 {
		q.BanAfter = q.PerMinute
	}
	return q, nil
}

func firstPositive(values ...int) int64 {
	for _, v := range values {
		if v > 0 {
			return int64(v)
		}
	}
	return 0
}
