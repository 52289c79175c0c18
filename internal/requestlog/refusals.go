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

// refusals turns a flood of refused requests (401, 429) into at most two
// rows per client network, status and minute: the first refusal, written at
// once so that staff see it, and at the minute's end one that counts the
// others. A client hammering the service without a valid key, or past its
// limit, cannot grow the log faster than the number of networks it sends
// from.
type refusals struct {
	mu     sync.Mutex
	minute int64 // Unix minute of the held rows
	held   map[refusalKey]*heldRefusal
}

type refusalKey struct {
	network string
	status  int
}

type heldRefusal struct {
	entry entry
	count int64
}

func newRefusals() *refusals { return &refusals{held: map[refusalKey]*heldRefusal{}} }

// status is the HTTP status of a request's entry.
func (en entry) status() int {
	if data, ok := en.data.(*requestData); ok {
		return data.Status
	}
	return 0
}

// refused reports whether status is a refusal that refusals coalesce.
func refused(status int) bool {
	return status == http.StatusUnauthorized || status == http.StatusTooManyRequests
}

// refusalFate is what add did with a refusal.
type refusalFate int

const (
	refusalWritten refusalFate = iota // the network's first this minute: a row of its own
	refusalCounted                    // counted in the network's row of the minute
	refusalDropped                    // the minute holds maxHeldRefusals networks already
)

// add counts a refused request of ip's network. It returns the rows to write
// now (en itself when it is the network's first refusal this minute, and the
// counts of past minutes), and what became of en.
func (r *refusals) add(ip string, en entry) (due []entry, fate refusalFate) {
	minute := en.created.Unix() / 60
	key := refusalKey{clientnet.Of(ip), en.status()}
	r.mu.Lock()
	defer r.mu.Unlock()
	if minute != r.minute {
		due = r.takeLocked()
		r.minute = minute
	}
	if h, ok := r.held[key]; ok {
		h.count++
		return due, refusalCounted
	}
	if len(r.held) >= maxHeldRefusals {
		return due, refusalDropped
	}
	r.held[key] = &heldRefusal{entry: en}
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
	var rows []entry
	for key, h := range r.held {
		delete(r.held, key)
		if h.count == 0 {
			continue
		}
		en := h.entry
		en.message = fmt.Sprintf("%s (%d more refused from this network this minute)", en.message, h.count)
		if data, ok := en.data.(*requestData); ok {
			counted := *data
			counted.Count = h.count
			en.data = &counted
		}
		rows = append(rows, en)
	}
	return rows
}
