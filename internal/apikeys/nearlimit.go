package apikeys

import (
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/usage"
)

// NearLimitPercent is the share of a day quota past which a window is near
// its limit: the first threshold the usage.threshold event tells of.
const NearLimitPercent = 80

// Window is a day window's use on one UTC day: a key's own, or a
// customer's that its keys share.
type Window struct {
	ID       string `db:"id" json:"id"`             // the key's record id, or the customer's
	Name     string `db:"name" json:"name"`         // a key's; a customer's is its caller's to read (customers.Names)
	Customer string `db:"customer" json:"customer"` // a key's customer ("" for none); a customer's window: its id
	Plan     string `db:"plan" json:"plan"`
	Keys     int64  `db:"keys" json:"keys"`   // the keys that used the window that day
	Used     int64  `db:"used" json:"used"`   // the requests it admitted: what the day quota counts
	Limit    int64  `db:"limit" json:"limit"` // the day quota
}

// usedToday is each key's requests admitted on the day (every outcome but
// limited: what its day window counts), read from the day's hours by the
// hour index and added up per key before any key is read.
const usedToday = `(SELECT api_key, SUM(CASE WHEN outcome = {:limited} THEN 0 ELSE requests END) AS used
	FROM ` + usage.Collection + ` WHERE hour >= {:first} AND hour < {:end} GROUP BY api_key) d
	JOIN api_keys k ON k.id = d.api_key JOIN plans p ON p.id = k.plan`

// keyDayLimit is a key's day quota: its own, else its plan's.
const keyDayLimit = `(CASE WHEN k.per_day > 0 THEN k.per_day ELSE p.per_day END)`

// nearLimitKeysSQL is every key that counts in a window of its own and is
// not revoked, past the share of its day quota on the day: one grouped
// read of the day's hours.
const nearLimitKeysSQL = `SELECT k.id, k.name, k.customer, p.name AS plan, ` + keyDayLimit + ` AS "limit", d.used, 1 AS keys
	FROM ` + usedToday + `
	WHERE k.revoked = '' AND NOT ` + countsPerCustomer + ` AND ` + keyDayLimit + ` > 0
		AND d.used * 100 >= ` + keyDayLimit + ` * {:percent}
	ORDER BY d.used * 1.0 / ` + keyDayLimit + ` DESC, k.name`

// nearLimitCustomersSQL is every customer's window (its keys that count in
// it and are not revoked, as the Ledger's Served adds them up) past the
// share of its plan's day quota on the day: one grouped read of the day's
// hours.
const nearLimitCustomersSQL = `SELECT k.customer AS id, k.customer, p.name AS plan, p.per_day AS "limit",
	SUM(d.used) AS used, COUNT(*) AS keys
	FROM ` + usedToday + `
	WHERE k.revoked = '' AND ` + countsPerCustomer + `
	GROUP BY k.customer, k.plan
	HAVING p.per_day > 0 AND SUM(d.used) * 100 >= p.per_day * {:percent}
	ORDER BY SUM(d.used) * 1.0 / p.per_day DESC, k.customer`

// NearLimit is every window past NearLimitPercent of its day quota on
// now's UTC day, fullest first: the keys counting in windows of their own,
// and the customers whose keys share one. It reads the saved counts (a
// caller saves this instance's first: usage.Recorder.Save).
func NearLimit(app core.App, now time.Time) (keys, customers []Window, err error) {
	day := now.UTC().Truncate(24 * time.Hour)
	params := dbx.Params{
		"first": dateString(day), "end": dateString(day.Add(24 * time.Hour)),
		"percent": NearLimitPercent, "limited": usage.Limited.String(),
	}
	keys, customers = []Window{}, []Window{}
	if err := app.DB().NewQuery(nearLimitKeysSQL).Bind(params).All(&keys); err != nil {
		return nil, nil, err
	}
	if err := app.DB().NewQuery(nearLimitCustomersSQL).Bind(params).All(&customers); err != nil {
		return nil, nil, err
	}
	return keys, customers, nil
}
