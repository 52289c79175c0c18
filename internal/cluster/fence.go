package cluster

import (
	"sync"
	"sync/atomic"
	"time"
)

// clock is the time the fence goes by: how long since a fixed origin. A
// node's is the monotonic clock (monotonic); the fence's tests give a fake
// one.
type clock func() time.Duration

// monotonic is the machine's monotonic clock, from the call on. It runs on
// while the process is stopped (SIGSTOP), unlike the time a process counts
// for itself.
func monotonic() clock {
	origin := time.Now()
	return func() time.Duration { return time.Since(origin) }
}

// fence says whether the leader may serve now: only while its lease is
// provably held. The lease is held at least until the moment a renewal was
// sent plus the TTL etcd answered, since etcd renews it after it receives
// the request; less a margin for the clocks' drift and for the commit that
// follows the check. The time is now's, the monotonic clock's in a node: a
// paused leader that resumes finds its fence closed before it hears from
// etcd.
//
// Once the fence has opened, a lease whose deadline has passed is never
// provably held again: a renewal recorded after the deadline does not
// extend it, so a leader whose fence closed by itself stays fenced, and
// steps down. A fence closed by close stays closed for its lease. Before
// it opens (a follower), a late renewal counts: etcd still had the lease.
type fence struct {
	now clock

	mu      sync.Mutex
	lease   int64         // the session's lease the deadline is for; 0: none
	until   time.Duration // the lease is provably held before then, by now
	leading bool          // this node holds the election for that lease, and serves
	closed  bool          // closed for this lease: it opens no more
	// openUntil is until while the fence is open, 0 while it is closed:
	// open reads it without the lock, on every request.
	openUntil atomic.Int64
}

// driftMargin is how long before the lease's provable end the fence closes:
// a tenth of the TTL, at least 250 ms.
func driftMargin(ttl time.Duration) time.Duration {
	return max(ttl/10, 250*time.Millisecond)
}

// renewed records that lease was renewed for ttl by a request sent at
// sentAt (by now). A renewal of another lease than the current one, or one
// recorded once the deadline has passed on a fence that has opened,
// changes nothing.
func (f *fence) renewed(lease int64, sentAt, ttl time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if lease != f.lease || (f.leading || f.closed) && f.now() >= f.until {
		return
	}
	if until := sentAt + ttl - driftMargin(ttl); until > f.until {
		f.until = until
		if f.leading {
			f.openUntil.Store(int64(until))
		}
	}
}

// newLease starts over with lease, granted for ttl by a request sent at
// sentAt (by now); this node does not lead with it yet.
func (f *fence) newLease(lease int64, sentAt, ttl time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lease, f.until, f.leading, f.closed = lease, sentAt+ttl-driftMargin(ttl), false, false
	f.openUntil.Store(0)
}

// held says whether the current lease is provably held now.
func (f *fence) held() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lease != 0 && f.now() < f.until
}

// untilEnd is how long the current lease stays provably held without
// another renewal.
func (f *fence) untilEnd() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return max(f.until-f.now(), 0)
}

// lead opens the fence for lease's election, if the lease is still held and
// the fence was not closed meanwhile.
func (f *fence) lead(lease int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leading = lease == f.lease && !f.closed && f.now() < f.until
	if f.leading {
		f.openUntil.Store(int64(f.until))
	}
	return f.leading
}

// close shuts the fence at once, for the rest of the current lease.
func (f *fence) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leading, f.closed = false, true
	f.openUntil.Store(0)
}

// open says whether the node may serve now: write, or answer from its
// copy. It takes no lock: an atomic read and the clock.
func (f *fence) open() bool {
	until := f.openUntil.Load()
	return until != 0 && f.now() < time.Duration(until)
}
