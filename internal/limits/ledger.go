package limits

import (
	"sync/atomic"
	"time"
)

// Ledger keeps what must outlive the limiter's counters: bans, and what each
// key was served per UTC day. The caller implements it over its own records.
type Ledger interface {
	SaveBan(keyID string, until time.Time) error
	// Served returns the requests served in each day window on day's UTC
	// day, as saved so far by every instance: never more than the windows
	// counted. A key's window is named by the key's id, a customer's by
	// CustomerWindows. Windows without any may be left out.
	Served(day time.Time) (map[string]int64, error)
}

// secondsPerDay: Unix time has no leap seconds, so every UTC day is as long.
const secondsPerDay = 86400

// dayOf is t's UTC day, in days since the Unix epoch.
func dayOf(t time.Time) int64 {
	s := t.Unix()
	if s < 0 {
		return (s - secondsPerDay + 1) / secondsPerDay
	}
	return s / secondsPerDay
}

// dayEnd is when day ends: the next 00:00 UTC.
func dayEnd(day int64) time.Time { return time.Unix((day+1)*secondsPerDay, 0) }

// served is the ledger's counts of one day: what a day window starts from
// when this instance has not counted it yet.
type served struct {
	day    int64
	counts map[string]int64
}

// ledgerCounts holds the last counts read from the ledger.
type ledgerCounts struct{ last atomic.Pointer[served] }

// of is what the ledger said the windows named id were served on day.
func (c *ledgerCounts) of(id string, day int64) int64 {
	if s := c.last.Load(); s != nil && s.day == day {
		return s.counts[id]
	}
	return 0
}

// readLedger reads the ledger's counts of now's day and raises what this
// instance knows of the other instances' counts to match: a floor that
// holds when Redis has lost the windows (restarted empty) and at the start
// of an instance counting in memory.
func (m *memoryStore) readLedger(now time.Time) error {
	counts, err := m.ledger.Served(now)
	if err != nil {
		return err
	}
	day := dayOf(now)
	m.fromLedger.last.Store(&served{day: day, counts: counts})
	for id, n := range counts {
		s := m.stripe(id)
		s.mu.Lock()
		if kc := s.keys[id]; kc != nil && kc.day == day {
			kc.dayCounts.others = max(kc.dayCounts.others, n-kc.dayCounts.mine)
		}
		s.mu.Unlock()
	}
	return nil
}

// readLedgerSoon reads the ledger in the background, off the request's
// path: one read at a time, and once more after it when asked meanwhile.
func (m *memoryStore) readLedgerSoon() {
	for {
		state := m.rereading.Load()
		if state == 2 {
			return
		}
		if m.rereading.CompareAndSwap(state, state+1) {
			if state == 0 {
				m.work.Add(1)
				go m.rereadLedger()
			}
			return
		}
	}
}

func (m *memoryStore) rereadLedger() {
	defer m.work.Done()
	for {
		if err := m.readLedger(m.cfg.Now()); err != nil {
			m.logger.Error("Could not read what API keys and customers were served today", "error", err)
		}
		if m.rereading.CompareAndSwap(1, 0) {
			return
		}
		m.rereading.Store(1)
	}
}
