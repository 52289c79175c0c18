package usage

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/audit"
	"petstore/internal/writegate"
)

// ThresholdsCollection holds one row per day window, UTC day and threshold
// crossed (a key's window, or a customer's that its keys share): what was
// told already.
const ThresholdsCollection = "usage_thresholds"

// percents are the thresholds of a day quota that are told of, in order.
var percents = [...]int64{80, 100}

// queueSize bounds the crossings waiting for their write: a crossing that
// finds the queue full is not marked, and the key's next request tries
// again.
const queueSize = 256

// Thresholds tells of keys that cross 80 % and 100 % of their day quota,
// once per day window (a key's, or a customer's that its keys share), UTC
// day and threshold: the request that makes the day
// window's count reach ceil(80 % of the limit), and the one that makes it
// reach the limit (with a limit under 5, both thresholds are the same
// count, and the same request crosses both).
//
// Observe runs on every request of a key: it compares the count with the
// first threshold and returns, and for a key past it, looks in memory
// whether this instance told of it already. A crossing goes to one
// goroutine that inserts its row in usage_thresholds (unique per key, or
// per customer, day and threshold) and, only if the row is new, the audit record
// usage.threshold (the service's), in one transaction; the webhooks write
// the usage.threshold event from that record, in the same transaction. A
// second attempt, after a restart or from another instance on the same
// data directory, inserts nothing and tells no one.
type Thresholds struct {
	app     core.App
	logger  *slog.Logger
	counted func(plan string, percent int64) // after the commit of a crossing told of
	gate    writegate.Gate                   // whether this node may write now

	mu     sync.Mutex
	day    int64                 // the UTC day marked holds
	marked map[crossingMark]bool // crossings of day queued or written by this instance
	queue  chan crossing
	done   chan struct{}
}

// crossing is a key's day window past one threshold.
type crossing struct {
	KeyID string
	// CustomerID is the customer whose day window the key counts in, shared
	// by its keys; "": the key's own window.
	CustomerID string
	Plan       string
	Percent    int64     // 80 or 100
	Limit      int64     // the day quota
	Used       int64     // requests the window held after the crossing request
	Resets     time.Time // when the day window starts again
	At         time.Time // when the request was counted: its UTC day is the window's
}

// crossingMark is a crossing as this instance marks it, once per window: a
// key's (keyID), or a customer's (customerID alone, whichever key crossed).
type crossingMark struct {
	keyID, customerID string
	percent           int64
}

func (c crossing) mark() crossingMark {
	if c.CustomerID != "" {
		return crossingMark{customerID: c.CustomerID, percent: c.Percent}
	}
	return crossingMark{keyID: c.KeyID, percent: c.Percent}
}

// StartThresholds returns Thresholds writing with app, logging failures to
// logger, and calling counted (when not nil) for each crossing told of.
// While gate is closed, a crossing is written by no one here: a node that
// no longer leads writes nothing its term's replica lacks, and the next
// leader's requests find the window past the threshold and tell of it.
func StartThresholds(app core.App, logger *slog.Logger, counted func(plan string, percent int64), gate writegate.Gate) *Thresholds {
	t := &Thresholds{
		app: app, logger: logger, counted: counted, gate: gate,
		marked: map[crossingMark]bool{}, queue: make(chan crossing, queueSize), done: make(chan struct{}),
	}
	go t.loop()
	return t
}

// Observe hears of one request of a key with plan, after which its day
// window of limit requests (0: none) held used, at at: the key's own window,
// or, with customerID, the customer's that its keys share, told of once for
// all of them. It never waits for the database.
func (t *Thresholds) Observe(keyID, customerID, plan string, limit, used int64, resets, at time.Time) {
	if !counting || limit <= 0 || used < thresholdOf(limit, percents[0]) {
		return
	}
	for _, percent := range percents {
		if used >= thresholdOf(limit, percent) {
			t.cross(crossing{KeyID: keyID, CustomerID: customerID, Plan: plan, Percent: percent, Limit: limit, Used: used,
				Resets: resets, At: at})
		}
	}
}

// thresholdOf is the count at which a window of limit requests crosses
// percent: ceil(limit × percent / 100).
func thresholdOf(limit, percent int64) int64 { return (limit*percent + 99) / 100 }

// cross queues c unless this instance queued it already.
func (t *Thresholds) cross(c crossing) {
	m := c.mark()
	day := dayOf(c.At)
	t.mu.Lock()
	defer t.mu.Unlock()
	if day > t.day {
		t.day, t.marked = day, map[crossingMark]bool{}
	}
	if t.marked[m] {
		return
	}
	select {
	case t.queue <- c:
		// A request of yesterday decided before midnight but heard after
		// it is not marked: its row says whether it was told of.
		t.marked[m] = day == t.day
	default:
	}
}

// unmark forgets c, whose write failed, so that the key's next request
// tries again.
func (t *Thresholds) unmark(c crossing) {
	t.mu.Lock()
	if dayOf(c.At) == t.day {
		delete(t.marked, c.mark())
	}
	t.mu.Unlock()
}

// Close writes the crossings queued and stops.
func (t *Thresholds) Close() error {
	close(t.queue)
	<-t.done
	return nil
}

func (t *Thresholds) loop() {
	defer close(t.done)
	for c := range t.queue {
		told, err := t.record(c)
		if errors.Is(err, writegate.ErrClosed) {
			t.logger.Warn("A key's crossing of a day quota threshold not recorded: this node may not write",
				"keyId", c.KeyID, "threshold", c.Percent)
			t.unmark(c)
			continue
		}
		if err != nil {
			t.logger.Error("Could not record a key's crossing of a day quota threshold",
				"keyId", c.KeyID, "threshold", c.Percent, "error", err)
			t.unmark(c)
			continue
		}
		if told && t.counted != nil {
			t.counted(c.Plan, c.Percent)
		}
	}
}

// insertThresholdSQL inserts a crossing's row, or nothing when its window
// has one for the day and threshold: a key's (unique per key) or a
// customer's (unique per customer, whichever key crossed).
const insertThresholdSQL = `INSERT INTO ` + ThresholdsCollection + ` (api_key, customer, day, threshold)
	VALUES ({:key}, {:customer}, {:day}, {:threshold}) ON CONFLICT DO NOTHING`

// record inserts c's row and, if it is new, its audit record, in one
// transaction; told says whether the row was new.
func (t *Thresholds) record(c crossing) (told bool, err error) {
	day := dayString(dayOf(c.At))
	err = t.gate.Write(t.app, func(tx core.App) error {
		res, err := tx.DB().NewQuery(insertThresholdSQL).Bind(dbx.Params{
			"key": c.KeyID, "customer": c.CustomerID, "day": day, "threshold": c.Percent,
		}).Execute()
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		told = true
		return audit.Write(tx, audit.Entry{Action: audit.UsageThreshold, Key: c.KeyID, Customer: c.CustomerID, By: audit.System, Details: map[string]any{
			"threshold": c.Percent, "day": day, "limit": c.Limit, "used": c.Used,
			"resetsAt": c.Resets.UTC().Format(time.RFC3339),
		}})
	})
	if err != nil {
		told = false
	}
	return told, err
}
