package customers

import (
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/usage"
)

// Top is a customer's use in a UTC month.
type Top struct {
	ID       string `db:"id" json:"id"`
	Name     string `db:"name" json:"name"`
	Plan     string `db:"plan" json:"plan"`
	Counted  string `db:"counted" json:"counted"`   // whose windows its plan counts in: key or customer
	Requests int64  `db:"requests" json:"requests"` // every outcome, of every key of it
	Limited  int64  `db:"limited" json:"limited"`   // of those, refused by a limit (429)
	// Quota is its share of its day quota over the month's days so far,
	// where one applies: its plan counts per customer; nil otherwise.
	Quota *MonthQuota `db:"-" json:"quota"`
}

// MonthQuota is what a customer's shared day window admitted in a month,
// against the day quota on each of the month's days so far (today's
// included, whole).
type MonthQuota struct {
	PerDay  int64   `json:"perDay"`
	Days    int64   `json:"days"`
	Used    int64   `json:"used"`    // admitted in the window: its keys without a quota of their own
	Percent float64 `json:"percent"` // Used of PerDay × Days, in %
}

// topSQL is every customer with use since {:first} (the month's first
// hour), most requests first: the month's hours added up per key first (by
// the hour index), then by customer. windowed is what its window counted:
// the requests admitted of its keys without a quota of their own, revoked
// ones included (they counted while they worked).
const topSQL = `SELECT c.id, c.name, p.name AS plan, p.counted, p.per_day,
	SUM(d.requests) AS requests, SUM(d.limited) AS limited,
	SUM(CASE WHEN k.per_minute = 0 AND k.per_day = 0 THEN d.requests - d.limited ELSE 0 END) AS windowed
	FROM (SELECT api_key, SUM(requests) AS requests, SUM(CASE WHEN outcome = {:limited} THEN requests ELSE 0 END) AS limited
		FROM ` + usage.Collection + ` WHERE hour >= {:first} GROUP BY api_key) d
	JOIN api_keys k ON k.id = d.api_key JOIN ` + Collection + ` c ON c.id = k.customer JOIN plans p ON p.id = c.plan
	GROUP BY c.id
	ORDER BY SUM(d.requests) DESC, c.name COLLATE NOCASE, c.id
	LIMIT {:n}`

// TopOfMonth is the n customers of most requests in now's UTC month, by
// their keys now, with their plans and, where their plan counts per
// customer, their share of its day quota. It reads the saved counts (a
// caller saves this instance's first: usage.Recorder.Save).
func TopOfMonth(app core.App, now time.Time, n int) ([]Top, error) {
	now = now.UTC()
	first := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	var rows []struct {
		Top
		PerDay   int64 `db:"per_day"`
		Windowed int64 `db:"windowed"`
	}
	err := app.DB().NewQuery(topSQL).Bind(dbx.Params{
		"first": first.Format("2006-01-02 15:04:05.000Z"), "limited": usage.Limited.String(), "n": n,
	}).All(&rows)
	if err != nil {
		return nil, err
	}
	top := make([]Top, len(rows))
	for i, r := range rows {
		top[i] = r.Top
		if r.Counted == "customer" && r.PerDay > 0 {
			q := &MonthQuota{PerDay: r.PerDay, Days: int64(now.Day()), Used: r.Windowed}
			q.Percent = float64(q.Used) * 100 / float64(q.PerDay*q.Days)
			top[i].Quota = q
		}
	}
	return top, nil
}

// Names is the name of each customer with one of the given record ids, by
// id.
func Names(app core.App, ids []string) (map[string]string, error) {
	names := make(map[string]string, len(ids))
	if len(ids) == 0 {
		return names, nil
	}
	in := make([]any, len(ids))
	for i, id := range ids {
		in[i] = id
	}
	var rows []struct {
		ID   string `db:"id"`
		Name string `db:"name"`
	}
	if err := app.DB().Select("id", NameField).From(Collection).Where(dbx.In("id", in...)).All(&rows); err != nil {
		return nil, err
	}
	for _, r := range rows {
		names[r.ID] = r.Name
	}
	return names, nil
}
