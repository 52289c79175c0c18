// Package usage keeps each API key's use per UTC hour, /v1 operation and
// outcome: served, refused for the client's mistake, refused by a limit,
// failed on our side. Requests are counted in memory, off every lock the
// database writer holds, and added to the usage_hours table every few
// seconds and at shutdown (one row per key, hour, operation and outcome,
// never one per request), so that several instances sharing one data
// directory add up. Hours older than the retention are purged once a day.
// The package also answers the reads of that history: a key's days, its
// caller's report, every key's count today.
package usage

import (
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/writegate"
)

// Collection holds one row per key, UTC hour, operation and outcome.
const Collection = "usage_hours"

// DefaultRetention is --usage-retention's default: 400 days, so that a year
// compares with the one before.
const DefaultRetention = 400 * 24 * time.Hour

// DefaultFlushEvery is how often counts are added to the table: what a
// kill -9 may lose.
const DefaultFlushEvery = 5 * time.Second

// The operations that are no /v1 operation of the document.
const (
	// OtherOperation is a request with a key that matched no operation: the
	// document itself, an unknown path (404), a known path with another
	// method (405).
	OtherOperation = "other"
	// UnknownOperation is the history kept per day before hours were: its
	// days became their 00:00 hour, the operation unknown.
	UnknownOperation = "unknown"
)

// Outcome is what became of a request, by the status it was answered with.
type Outcome uint8

const (
	Served  Outcome = iota // 1xx to 3xx
	Refused                // 4xx but 429: refused for the client's mistake
	Limited                // 429: refused by a limit (rate limit or ban)
	Failed                 // 5xx: failed on our side
	outcomes
)

// outcomeNames are the outcomes as the table stores them.
var outcomeNames = [outcomes]string{"served", "refused", "limited", "failed"}

func (o Outcome) String() string { return outcomeNames[o] }

// OutcomeOf is the outcome of a request answered with status. Only the rate
// limit answers /v1 with 429.
func OutcomeOf(status int) Outcome {
	switch {
	case status == http.StatusTooManyRequests:
		return Limited
	case status >= 500:
		return Failed
	case status >= 400:
		return Refused
	}
	return Served
}

// Config is how a Recorder keeps its counts.
type Config struct {
	// Retention is how long an hour is kept; 0: forever.
	Retention time.Duration
	// FlushEvery is how often counts are added to the table;
	// DefaultFlushEvery when 0.
	FlushEvery time.Duration
	// Gate says whether this node may write now (internal/writegate):
	// while it may not, counts stay in memory, the old hours stay, and the
	// counts left at Close are dropped. Flush, the handover's, writes
	// them whatever it says.
	Gate writegate.Gate
}

// Recorder counts requests per key, hour, operation and outcome in memory
// and adds the counts to the table.
type Recorder struct {
	app    core.App
	logger *slog.Logger
	cfg    Config

	mu      sync.Mutex
	pending map[entry]int64

	// flushing is held through a whole flush, from taking the counts to
	// the commit: a Save that comes while another flush writes waits for
	// it, so that its caller reads the counts that flush took. Record never
	// takes it.
	flushing sync.Mutex

	purgedDay int64 // the day of the last purge; touched by the flush loop only
	stop      chan struct{}
	done      chan struct{}
}

// entry is one key's requests of one operation and outcome in one UTC hour
// (hours since the Unix epoch).
type entry struct {
	keyID     string
	hour      int64
	operation string
	outcome   Outcome
}

// Start returns a Recorder adding its counts to app's table every
// cfg.FlushEvery until Close, logging failures to logger. It purges old
// hours at once.
func Start(app core.App, cfg Config, logger *slog.Logger) (*Recorder, error) {
	if cfg.FlushEvery <= 0 {
		cfg.FlushEvery = DefaultFlushEvery
	}
	r := &Recorder{
		app: app, logger: logger, cfg: cfg, pending: map[entry]int64{},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	// A cluster node starts before its fence opens: its loop purges then.
	if cfg.Gate.Open() {
		if err := r.purge(time.Now()); err != nil {
			return nil, err
		}
	}
	go r.loop()
	return r, nil
}

// Record counts one request of the key with the given record id to
// operation (its operation id in the document, or OtherOperation), in at's
// UTC hour (at: when its rate limit counted it), with its outcome.
func (r *Recorder) Record(keyID, operation string, at time.Time, outcome Outcome) {
	if !counting {
		return
	}
	e := entry{keyID, hourOf(at), operation, outcome}
	r.mu.Lock()
	r.pending[e]++
	r.mu.Unlock()
}

// Flush adds what is counted in memory now, whatever the gate says: a
// cluster leader's handover calls it, its fence closed, before its last
// shipment, so that the next leader has the counts.
func (r *Recorder) Flush() error { return r.flush(r.app.RunInTransaction) }

// Close stops the loop and adds what is still counted in memory, if the
// node may write.
func (r *Recorder) Close() error {
	close(r.stop)
	<-r.done
	err := r.flush(r.gated)
	if errors.Is(err, writegate.ErrClosed) {
		r.mu.Lock()
		var dropped int64
		for _, n := range r.pending {
			dropped += n
		}
		r.mu.Unlock()
		r.logger.Warn("Usage counts not saved: this node may not write", "requests", dropped)
		return nil
	}
	return err
}

// gated runs fn in a transaction that the gate lets commit.
func (r *Recorder) gated(fn func(tx core.App) error) error { return r.cfg.Gate.Write(r.app, fn) }

func (r *Recorder) loop() {
	defer close(r.done)
	t := time.NewTicker(r.cfg.FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case now := <-t.C:
			if !r.cfg.Gate.Open() {
				continue
			}
			if err := r.flush(r.gated); err != nil && !errors.Is(err, writegate.ErrClosed) {
				r.logger.Error("Could not save the usage history of API keys", "error", err)
			}
			if dayOf(now) != r.purgedDay {
				if err := r.purge(now); err != nil && !errors.Is(err, writegate.ErrClosed) {
					r.logger.Error("Could not purge old usage history of API keys", "error", err)
				}
			}
		}
	}
}

const addSQL = `INSERT INTO ` + Collection + ` (api_key, hour, operation, outcome, requests)
	VALUES ({:key}, {:hour}, {:operation}, {:outcome}, {:requests})
	ON CONFLICT (api_key, hour, operation, outcome) DO UPDATE SET requests = requests + excluded.requests`

// flush adds the counts in memory to the table in one transaction, run by
// inTx. On failure they go back in memory for the next try.
func (r *Recorder) flush(inTx func(fn func(tx core.App) error) error) error {
	r.flushing.Lock()
	defer r.flushing.Unlock()
	r.mu.Lock()
	batch := r.pending
	r.pending = make(map[entry]int64, len(batch))
	r.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	err := inTx(func(tx core.App) error {
		add := tx.DB().NewQuery(addSQL).Prepare()
		defer add.Close()
		for e, n := range batch {
			_, err := add.Bind(dbx.Params{
				"key": e.keyID, "hour": hourString(e.hour), "operation": e.operation, "outcome": e.outcome.String(), "requests": n,
			}).Execute()
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		r.mu.Lock()
		for e, n := range batch {
			r.pending[e] += n
		}
		r.mu.Unlock()
	}
	return err
}

// purge deletes the hours older than the retention, and the thresholds
// told of on the days before, if the gate lets it.
func (r *Recorder) purge(now time.Time) error {
	if r.cfg.Retention > 0 {
		cutoff := now.Add(-r.cfg.Retention)
		err := r.cfg.Gate.Write(r.app, func(tx core.App) error {
			_, err := tx.DB().Delete(Collection, dbx.NewExp("hour < {:oldest}",
				dbx.Params{"oldest": hourString(hourOf(cutoff))})).Execute()
			if err != nil {
				return err
			}
			// The thresholds told of go with their days: today's, never.
			_, err = tx.DB().Delete(ThresholdsCollection, dbx.NewExp("day < {:oldest}",
				dbx.Params{"oldest": dayString(dayOf(cutoff))})).Execute()
			return err
		})
		if err != nil {
			return err
		}
	}
	r.purgedDay = dayOf(now)
	return nil
}

// Unix time has no leap seconds: hours and days are whole.
func hourOf(t time.Time) int64 { return t.Unix() / 3600 }
func dayOf(t time.Time) int64  { return t.Unix() / 86400 }

// hourString is an hour as the table's date field stores it.
func hourString(hour int64) string {
	return time.Unix(hour*3600, 0).UTC().Format("2006-01-02 15:04:05.000Z")
}

func dayString(day int64) string {
	return time.Unix(day*86400, 0).UTC().Format(time.DateOnly)
}
