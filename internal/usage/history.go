package usage

import (
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"
)

// Counts are requests by outcome.
type Counts struct {
	Requests int64 `json:"requests"` // every outcome
	Refused  int64 `json:"refused"`  // 4xx but 429: the client's mistake
	Limited  int64 `json:"limited"`  // 429: refused by a limit (rate limit or ban)
	Failed   int64 `json:"failed"`   // 5xx: failed on our side
}

// Served is how many of the requests were served (1xx to 3xx).
func (c Counts) Served() int64 { return c.Requests - c.Refused - c.Limited - c.Failed }

// Admitted is how many of the requests the limits admitted, whatever their
// answer: what the key's day window counts, as refused requests count in
// no window.
func (c Counts) Admitted() int64 { return c.Requests - c.Limited }

// Plus is c and d added up.
func (c Counts) Plus(d Counts) Counts {
	return Counts{Requests: c.Requests + d.Requests, Refused: c.Refused + d.Refused, Limited: c.Limited + d.Limited, Failed: c.Failed + d.Failed}
}

func (c *Counts) add(o Outcome, n int64) {
	c.Requests += n
	switch o {
	case Refused:
		c.Refused += n
	case Limited:
		c.Limited += n
	case Failed:
		c.Failed += n
	}
}

// Day is one key's use on one UTC day.
type Day struct {
	Day string `json:"day"` // YYYY-MM-DD
	Counts
}

// History is the use of the key with the given record id on each of the
// last days UTC days up to now's, oldest first, days without use included.
// It adds what this instance has counted but not yet saved.
func (r *Recorder) History(keyID string, days int, now time.Time) ([]Day, error) {
	return r.Days([]string{keyID}, days, now)
}

// Days is the use, added up, of the keys with the given record ids on each
// of the last days UTC days up to now's, oldest first, days without use
// included, with what this instance has counted but not yet saved.
func (r *Recorder) Days(keyIDs []string, days int, now time.Time) ([]Day, error) {
	today := dayOf(now)
	first := today - int64(days) + 1
	history := make([]Day, days)
	byDay := make(map[string]*Day, days)
	for i := range history {
		history[i].Day = dayString(first + int64(i))
		byDay[history[i].Day] = &history[i]
	}
	if len(keyIDs) == 0 {
		return history, nil
	}
	ids, wanted := keySet(keyIDs)
	var rows []struct {
		Day      string `db:"day"`
		Outcome  string `db:"outcome"`
		Requests int64  `db:"requests"`
	}
	// substr(hour, 1, 10) is the hour's UTC day; the (api_key, hour, ...)
	// index finds each key's hours since first.
	err := r.app.DB().Select("substr(hour, 1, 10) AS day", "outcome", "SUM(requests) AS requests").From(Collection).
		Where(dbx.In("api_key", ids...)).
		AndWhere(dbx.NewExp("hour >= {:first}", dbx.Params{"first": hourString(first * 24)})).
		GroupBy("day", "outcome").
		All(&rows)
	if err != nil {
		return nil, err
	}
	for _, row := range rows {
		if d := byDay[row.Day]; d != nil {
			d.add(outcomeNamed(row.Outcome), row.Requests)
		}
	}
	r.mu.Lock()
	for e, n := range r.pending {
		if day := e.hour / 24; wanted[e.keyID] && day >= first && day <= today {
			history[day-first].add(e.outcome, n)
		}
	}
	r.mu.Unlock()
	return history, nil
}

// Report is one key's use as its caller sees it.
type Report struct {
	Today Day   // now's UTC day
	Month Month // now's UTC month, up to now
	Days  []Day // the last ReportDays UTC days, today's included, oldest first
}

// Month is one key's use in one UTC month.
type Month struct {
	Month string // YYYY-MM
	Counts
}

// ReportDays is how many days a Report lists.
const ReportDays = 30

// Report is the use of the key with the given record id today, this month
// and on each of the last ReportDays days, as History counts it.
func (r *Recorder) Report(keyID string, now time.Time) (Report, error) {
	now = now.UTC()
	days, err := r.History(keyID, max(ReportDays, now.Day()), now)
	if err != nil {
		return Report{}, err
	}
	month := Month{Month: now.Format("2006-01")}
	for _, d := range days[len(days)-now.Day():] {
		month.Counts = month.Plus(d.Counts)
	}
	return Report{Today: days[len(days)-1], Month: month, Days: days[len(days)-ReportDays:]}, nil
}

// Today is the use on now's UTC day of the keys with the given record ids,
// or of every key when none is given, with what this instance has counted
// but not yet saved; keys without use are left out.
func (r *Recorder) Today(now time.Time, keyIDs ...string) (map[string]Counts, error) {
	counts, err := Saved(r.app, now, keyIDs...)
	if err != nil {
		return nil, err
	}
	_, wanted := keySet(keyIDs)
	today := dayOf(now)
	r.mu.Lock()
	for e, n := range r.pending {
		if e.hour/24 == today && (len(keyIDs) == 0 || wanted[e.keyID]) {
			sum := counts[e.keyID]
			sum.add(e.outcome, n)
			counts[e.keyID] = sum
		}
	}
	r.mu.Unlock()
	return counts, nil
}

// Saved is the use on day's UTC day of the keys with the given record ids,
// or of every key when none is given, as saved in app's table by every
// instance (each saves every few seconds); keys without use are left out.
func Saved(app core.App, day time.Time, keyIDs ...string) (map[string]Counts, error) {
	var rows []struct {
		Key      string `db:"api_key"`
		Outcome  string `db:"outcome"`
		Requests int64  `db:"requests"`
	}
	first := dayOf(day) * 24
	q := app.DB().Select("api_key", "outcome", "SUM(requests) AS requests").From(Collection).
		Where(dbx.NewExp("hour >= {:first} AND hour < {:end}", dbx.Params{
			"first": hourString(first), "end": hourString(first + 24),
		}))
	if len(keyIDs) > 0 {
		ids := make([]any, len(keyIDs))
		for i, id := range keyIDs {
			ids[i] = id
		}
		q.AndWhere(dbx.In("api_key", ids...))
	}
	if err := q.GroupBy("api_key", "outcome").All(&rows); err != nil {
		return nil, err
	}
	counts := make(map[string]Counts, len(rows))
	for _, row := range rows {
		c := counts[row.Key]
		c.add(outcomeNamed(row.Outcome), row.Requests)
		counts[row.Key] = c
	}
	return counts, nil
}

// outcomeNamed is the outcome the table calls name.
func outcomeNamed(name string) Outcome {
	for o, n := range outcomeNames {
		if n == name {
			return Outcome(o)
		}
	}
	return Served // the field's select allows no other value
}

// Hour is the use in one UTC hour.
type Hour struct {
	Hour string `json:"hour"` // 2026-12-07T10:00Z
	Counts
}

// Hours is the use, added up, of the keys with the given record ids in
// each of the last hours UTC hours up to now's, oldest first, hours without
// use included, with what this instance has counted but not yet saved.
func (r *Recorder) Hours(keyIDs []string, hours int, now time.Time) ([]Hour, error) {
	last := hourOf(now)
	first := last - int64(hours) + 1
	series := make([]Hour, hours)
	for i := range series {
		series[i].Hour = time.Unix((first+int64(i))*3600, 0).UTC().Format("2006-01-02T15:04Z")
	}
	if len(keyIDs) == 0 {
		return series, nil
	}
	ids, wanted := keySet(keyIDs)
	var rows []struct {
		Hour     string `db:"hour"`
		Outcome  string `db:"outcome"`
		Requests int64  `db:"requests"`
	}
	err := r.app.DB().Select("hour", "outcome", "SUM(requests) AS requests").From(Collection).
		Where(dbx.In("api_key", ids...)).
		AndWhere(dbx.NewExp("hour >= {:first}", dbx.Params{"first": hourString(first)})).
		GroupBy("hour", "outcome").
		All(&rows)
	if err != nil {
		return nil, err
	}
	byHour := make(map[string]*Hour, hours)
	for i := range series {
		byHour[hourString(first+int64(i))] = &series[i]
	}
	for _, row := range rows {
		if h := byHour[row.Hour]; h != nil {
			h.add(outcomeNamed(row.Outcome), row.Requests)
		}
	}
	r.mu.Lock()
	for e, n := range r.pending {
		if wanted[e.keyID] && e.hour >= first && e.hour <= last {
			series[e.hour-first].add(e.outcome, n)
		}
	}
	r.mu.Unlock()
	return series, nil
}

// keySet is keyIDs as a query's arguments (dbx.In) and as a set, to pick
// the counts still in memory that belong to them.
func keySet(keyIDs []string) (ids []any, wanted map[string]bool) {
	ids = make([]any, len(keyIDs))
	wanted = make(map[string]bool, len(keyIDs))
	for i, id := range keyIDs {
		ids[i] = id
		wanted[id] = true
	}
	return ids, wanted
}
