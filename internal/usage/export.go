package usage

import (
	"errors"
	"time"

	"github.com/pocketbase/dbx"

	"petstore/internal/writegate"
)

// Rollup is one key's requests of one operation and outcome in one UTC
// hour or day.
type Rollup struct {
	Period    string // an hour, 2026-12-07T10:00Z, or a day, 2026-12-07
	Key       string // the key's record id
	Operation string // its operation id in the document, OtherOperation or UnknownOperation
	Outcome   string // served, refused, limited or failed
	Requests  int64
}

// Range is a span of whole UTC hours of the history, and how to cut it.
type Range struct {
	From, To time.Time // To excluded; both on the hour
	Daily    bool      // a rollup per day, else per hour
	// Keys are the record ids of the keys to read; nil: every key.
	Keys []string
}

// Hours are rg's first hour and the hour after its last, as the table
// stores hours.
func (rg Range) Hours() (from, to string) {
	return hourString(hourOf(rg.From)), hourString(hourOf(rg.To))
}

// Save adds what this instance has counted to the table now, if the node
// may write: reads of the table alone then hold what History shows.
func (r *Recorder) Save() error {
	if err := r.flush(r.gated); err != nil && !errors.Is(err, writegate.ErrClosed) {
		return err
	}
	return nil
}

// Export calls each with every rollup of the keys in rg, ordered by period,
// key, operation and outcome, and stops at each's first error. It first
// saves what this instance has counted (Save), so that the export holds
// what History shows.
func (r *Recorder) Export(rg Range, each func(Rollup) error) error {
	if err := r.Save(); err != nil {
		return err
	}
	if rg.Keys != nil && len(rg.Keys) == 0 {
		return nil
	}
	period := "substr(hour, 1, 10) || 'T' || substr(hour, 12, 2) || ':00Z'"
	if rg.Daily {
		period = "substr(hour, 1, 10)"
	}
	from, to := rg.Hours()
	q := r.app.DB().Select(period+" AS period", "api_key", "operation", "outcome", "SUM(requests) AS requests").From(Collection).
		Where(dbx.NewExp("hour >= {:from} AND hour < {:to}", dbx.Params{"from": from, "to": to}))
	if rg.Keys != nil {
		ids := make([]any, len(rg.Keys))
		for i, id := range rg.Keys {
			ids[i] = id
		}
		q.AndWhere(dbx.In("api_key", ids...))
	}
	rows, err := q.GroupBy("period", "api_key", "operation", "outcome").
		OrderBy("period", "api_key", "operation", "outcome").Rows()
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var x Rollup
		if err := rows.Scan(&x.Period, &x.Key, &x.Operation, &x.Outcome, &x.Requests); err != nil {
			return err
		}
		if err := each(x); err != nil {
			return err
		}
	}
	return rows.Err()
}
