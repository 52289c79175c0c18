package usage

import (
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"
)

// Day is one key's use on one UTC day.
type Day struct {
	Day string `json:"day"` // YYYY-MM-DD
	Counts
}

// History is the use of the key with the given record id on each of the
// last days UTC days up to now's, oldest first, days without use included.
// It adds what this instance has counted but not yet saved.
func (r *Recorder) History(keyID string, days int, now time.Time) ([]Day, error) {
	today := dayOf(now)
	first := today - int64(days) + 1
	var rows []struct {
		Day      string `db:"day"`
		Requests int64  `db:"requests"`
		Limited  int64  `db:"limited"`
	}
	err := r.app.DB().Select("day", "requests", "limited").From(Collection).
		Where(dbx.HashExp{"api_key": keyID}).
		AndWhere(dbx.NewExp("day >= {:first}", dbx.Params{"first": dayString(first)})).
		All(&rows)
	if err != nil {
		return nil, err
	}
	history := make([]Day, days)
	byDay := make(map[string]*Day, days)
	for i := range history {
		history[i].Day = dayString(first + int64(i))
		byDay[history[i].Day] = &history[i]
	}
	for _, row := range rows {
		if d := byDay[row.Day]; d != nil {
			d.Requests += row.Requests
			d.Limited += row.Limited
		}
	}
	r.mu.Lock()
	for e, c := range r.pending {
		if e.keyID == keyID && e.day >= first && e.day <= today {
			d := &history[e.day-first]
			d.Requests += c.Requests
			d.Limited += c.Limited
		}
	}
	r.mu.Unlock()
	return history, nil
}

// Today is the use on now's UTC day of the keys with the given record ids,
// or of every key when none is given, with what this instance has counted
// but not yet saved; keys without use are left out.
func (r *Recorder) Today(now time.Time, keyIDs ...string) (map[string]Counts, error) {
	counts, err := Saved(r.app, now, keyIDs...)
	if err != nil {
		return nil, err
	}
	wanted := make(map[string]bool, len(keyIDs))
	for _, id := range keyIDs {
		wanted[id] = true
	}
	today := dayOf(now)
	r.mu.Lock()
	for e, c := range r.pending {
		if e.day == today && (len(keyIDs) == 0 || wanted[e.keyID]) {
			sum := counts[e.keyID]
			sum.Requests += c.Requests
			sum.Limited += c.Limited
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
		Requests int64  `db:"requests"`
		Limited  int64  `db:"limited"`
	}
	where := dbx.HashExp{"day": dayString(dayOf(day))}
	if len(keyIDs) > 0 {
		ids := make([]any, len(keyIDs))
		for i, id := range keyIDs {
			ids[i] = id
		}
		where["api_key"] = ids
	}
	err := app.DB().Select("api_key", "requests", "limited").From(Collection).Where(where).All(&rows)
	if err != nil {
		return nil, err
	}
	counts := make(map[string]Counts, len(rows))
	for _, row := range rows {
		counts[row.Key] = Counts{Requests: row.Requests, Limited: row.Limited}
	}
	return counts, nil
}
