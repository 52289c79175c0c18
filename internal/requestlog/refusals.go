package requestlog

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"petstore/internal/clientnet"
)

// maxHeldRefusals bounds the client networks whose refusals a minute holds
// (each about 1 KB); refusals from networks beyond it are dropped.
const maxHeldRefusals = 10_000

// rowsPerNetwork bounds the rows of its own that one client network's
// failed requests write in a minute, whatever their statuses; the first of
// each status is written beyond it.
const rowsPerNetwork = 10

// refusals turns a flood of failed requests (any status from 400) into a
// bounded number of rows per client network and minute: the first of each
// status, written at once so that staff see it; up to rowsPerNetwork in
// all, except for 401 and 429, whose floods are their nature (a client
// without a valid key, or past its limit), which write their first alone;
// and at the minute's end, per status, one row that counts the others. A
// client sending requests that fail, 404s with long URLs included, cannot
// grow the log faster than the number of networks it sends from.
type refusals struct {
	mu     sync.Mutex
	minute int64 // Unix minute of the held rows
	held   map[refusalKey]*heldRefusal
	rows   map[string]int // rows of its own each network wrote this minute
}

type refusalKey struct {
	network string
	status  int
}

type heldRefusal struct {
	entry entry
	count int64
}

func newRefusals() *refusals {
	return &refusals{held: map[refusalKey]*heldRefusal{}, rows: map[string]int{}}
}

// status is the HTTP status of a request's entry.
func (en entry) status() int {
	if data, ok := en.data.(*requestData); ok {
		return data.Status
	}
	return 0
}

// failed reports whether status is a failure that refusals bound.
func failed(status int) bool { return status >= http.StatusBadRequest }

// firstOnly reports whether a status's failures write their first row
// alone, the rest counted.
func firstOnly(status int) bool {
	return status == http.StatusUnauthorized || status == http.StatusTooManyRequests
}

// refusalFate is what add did with a refusal.
type refusalFate int

const (
	refusalWritten refusalFate = iota // a row of its own
	refusalCounted                    // counted in the network's row of the minute
	refusalDropped                    // the minute holds maxHeldRefusals networks already
)

// add counts a failed request of ip's network. It returns the rows to
// write now (en itself when it gets a row of its own, and the counts of
// past minutes), and what became of en.
func (r *refusals) add(ip string, en entry) (due []entry, fate refusalFate) {
	minute := en.created.Unix() / 60
	key := refusalKey{clientnet.Of(ip), en.status()}
	r.mu.Lock()
	defer r.mu.Unlock()
	if minute != r.minute {
		due = r.takeLocked()
		r.minute = minute
	}
	h, ok := r.held[key]
	switch {
	case !ok && len(r.held) >= maxHeldRefusals:
		return due, refusalDropped
	case !ok:
		r.held[key] = &heldRefusal{entry: en}
	case firstOnly(key.status) || r.rows[key.network] >= rowsPerNetwork:
		h.count++
		return due, refusalCounted
	}
	r.rows[key.network]++
	return append(due, en), refusalWritten
}

// due returns the rows of minutes before now's, or all of them with a zero
// now.
func (r *refusals) due(now time.Time) []entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !now.IsZero() && now.Unix()/60 == r.minute {
		return nil
	}
	return r.takeLocked()
}

func (r *refusals) takeLocked() []entry {
	if len(r.held) == 0 {
		return nil
	}
	clear(r.rows)
	var rows []entry
	for key, h := range r.held {
		delete(r.held, key)
		if h.count == 0 {
			continue
		}
		en := h.entry
		en.message = fmt.Sprintf("%s (%d more with this status from this network this minute)", en.message, h.count)
		if data, ok := en.data.(*requestData); ok {
			counted := *data
			counted.Count = h.count
			en.data = &counted
		}
		rows = append(rows, en)
	}
	return rows
}
