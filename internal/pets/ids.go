package pets

import (
	"strconv"
	"sync/atomic"
	"time"
)

// Pet ids grow with time: the Unix millisecond of the create times
// idsPerMilli, plus one for each id already given in that millisecond or
// later. New rows then go to the right-hand end of the primary key and of
// idx_pets_status_id, where the creates of one transaction, and of one
// replica shipment, share their pages (a random id dirties a page of each
// index per create once the table outgrows the page cache). An id is never
// given twice by one process; at a writer's start the clock moves past the
// largest id the table holds near now, so a restarted or promoted node goes
// on after what it holds even when its clock is behind.
//
// The ids of the Unix milliseconds up to the year 2286 have IDPattern's 15
// digits; a clock set before 2001 gives the smallest of them.
const (
	idsPerMilli = 100
	minID       = 100_000_000_000_000
)

// idClock hands out pet ids; its zero value is ready.
type idClock struct{ last atomic.Int64 }

// ids is the process's clock: the writer's creates and the dashboard's
// draw from it.
var ids idClock

// next is a new id: after every id this clock gave or was moved past.
func (c *idClock) next(now time.Time) string {
	at := max(now.UnixMilli()*idsPerMilli, minID)
	for {
		last := c.last.Load()
		id := max(at, last+1)
		if c.last.CompareAndSwap(last, id) {
			return strconv.FormatInt(id, 10)
		}
	}
}

// movePast makes every later id larger than id.
func (c *idClock) movePast(id int64) {
	for {
		last := c.last.Load()
		if id <= last || c.last.CompareAndSwap(last, id) {
			return
		}
	}
}
