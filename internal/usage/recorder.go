// Package usage keeps each API key's use per UTC day: requests made, and of
// those the ones refused with 429; the others, served, are what the key's
// day quota counts. Requests are counted in memory and added to the
// api_key_usage table every few seconds and at shutdown, so that several
// instances sharing one data directory add up. Days older than Retention are
// purged.
package usage

import (
	"log/slog"
	"sync"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"
)

// Collection holds one row per key and UTC day.
const Collection = "api_key_usage"

// Retention is how many UTC days are kept, today included.
const Retention = 90

// DefaultFlushEvery is how often counts are added to the table.
const DefaultFlushEvery = 5 * time.Second

const dayLayout = "2006-01-02"

// Recorder counts requests per key and day in memory and adds the counts to
// the table.
type Recorder struct {
	app        core.App
	logger     *slog.Logger
	flushEvery time.Duration

	mu      sync.Mutex
	pending map[entry]Counts

	purgedDay int64 // the day of the last purge; touched by the flush loop only
	stop      chan struct{}
	done      chan struct{}
}

// entry is one key on one UTC day (days since the Unix epoch).
type entry struct {
	keyID string
	day   int64
}

// Counts are one key's requests on one day.
type Counts struct {
	Requests int64 `json:"requests"` // served and refused
	Limited  int64 `json:"limited"`  // refused with 429 (rate limit or ban)
}

// Served is how many of the requests were served: what the key's day window
// counts, as refused requests count in no window.
func (c Counts) Served() int64 { return c.Requests - c.Limited }

// Start returns a Recorder adding its counts to app's table every flushEvery
// (DefaultFlushEvery when 0) until Close, logging failures to logger. It
// purges old days at once.
func Start(app core.App, flushEvery time.Duration, logger *slog.Logger) (*Recorder, error) {
	if flushEvery <= 0 {
		flushEvery = DefaultFlushEvery
	}
	r := &Recorder{
		app: app, logger: logger, flushEvery: flushEvery, pending: map[entry]Counts{},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	if err := r.purge(time.Now()); err != nil {
		return nil, err
	}
	go r.loop()
	return r, nil
}

// Record counts one request of the key with the given record id on now's
// UTC day (the day its rate limit counted it in); limited when it was
// refused with 429.
func (r *Recorder) Record(keyID string, now time.Time, limited bool) {
	e := entry{keyID, dayOf(now)}
	r.mu.Lock()
	c := r.pending[e]
	c.Requests++
	if limited {
		c.Limited++
	}
	r.pending[e] = c
	r.mu.Unlock()
}

// Close stops the loop and adds what is still counted in memory.
func (r *Recorder) Close() error {
	close(r.stop)
	<-r.done
	return r.flush()
}

func (r *Recorder) loop() {
	defer close(r.done)
	t := time.NewTicker(r.flushEvery)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case now := <-t.C:
			if err := r.flush(); err != nil {
				r.logger.Error("Could not save the usage history of API keys", "error", err)
			}
			if dayOf(now) != r.purgedDay {
				if err := r.purge(now); err != nil {
					r.logger.Error("Could not purge old usage history of API keys", "error", err)
				}
			}
		}
	}
}

const addSQL = `INSERT INTO ` + Collection + ` (api_key, day, requests, limited)
	VALUES ({:key}, {:day}, {:requests}, {:limited})
	ON CONFLICT (api_key, day) DO UPDATE SET
		requests = requests + excluded.requests, limited = limited + excluded.limited`

// flush adds the counts in memory to the table in one transaction. On
// failure they go back in memory for the next try.
func (r *Recorder) flush() error {
	r.mu.Lock()
	batch := r.pending
	r.pending = map[entry]Counts{}
	r.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	err := r.app.RunInTransaction(func(tx core.App) error {
		for e, c := range batch {
			_, err := tx.DB().NewQuery(addSQL).Bind(dbx.Params{
				"key": e.keyID, "day": dayString(e.day), "requests": c.Requests, "limited": c.Limited,
			}).Execute()
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		r.mu.Lock()
		for e, c := range batch {
			p := r.pending[e]
			p.Requests += c.Requests
			p.Limited += c.Limited
			r.pending[e] = p
		}
		r.mu.Unlock()
	}
	return err
}

// purge deletes the days before the last Retention.
func (r *Recorder) purge(now time.Time) error {
	today := dayOf(now)
	_, err := r.app.DB().Delete(Collection, dbx.NewExp("day < {:oldest}",
		dbx.Params{"oldest": dayString(today - Retention + 1)})).Execute()
	if err == nil {
		r.purgedDay = today
	}
	return err
}

func dayOf(t time.Time) int64 {
	return t.Unix() / 86400 // Unix time has no leap seconds: days are whole
}

func dayString(day int64) string {
	return time.Unix(day*86400, 0).UTC().Format(dayLayout)
}
