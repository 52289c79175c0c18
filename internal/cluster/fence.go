package cluster

import (
	"sync"
	"time"
)

// fence says whether the leader may write now: only while its lease is
// provably held. The lease is held at least until the moment a renewal was
// sent plus the TTL etcd answered, since etcd renews it after it receives
// the request; less a margin for the clocks' drift and for the commit that
// follows the check. The time is the monotonic clock's, which runs on while
// the process is stopped (SIGSTOP): a paused leader that resumes finds its
// fence closed before it hears from etcd.
type fence struct {
	mu      sync.Mutex
	lease   int64     // the session's lease the deadline is for; 0: none
	until   time.Time // the lease is held until then (with monotonic reading)
	leading bool      // this node holds the election for that lease
}

// driftMargin is how long before the lease's provable end the fence closes:
// a tenth of the TTL, at least 250 ms.
func driftMargin(ttl time.Duration) time.Duration {
	return max(ttl/10, 250*time.Millisecond)
}

// renewed records that lease was renewed for ttl by a request sent at sentAt.
// A renewal of another lease than the current one changes nothing.
func (f *fence) renewed(lease int64, sentAt time.Time, ttl time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if lease != f.lease {
		return
	}
	if until := sentAt.Add(ttl - driftMargin(ttl)); until.After(f.until) {
		f.until = until
	}
}

// newLease starts over with lease, granted for ttl by a request sent at
// sentAt; this node does not lead with it yet.
func (f *fence) newLease(lease int64, sentAt time.Time, ttl time.Duration) {
	f.mu.Lock()
	f.lease, f.until, f.leading = lease, time.Time{}, false
	f.mu.Unlock()
	f.renewed(lease, sentAt, ttl)
}

// held says whether the current lease is provably held now.
func (f *fence) held() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lease != 0 && time.Now().Before(f.until)
}

// untilEnd is how long the current lease stays provably held without
// another renewal.
func (f *fence) untilEnd() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return max(time.Until(f.until), 0)
}

// lead opens the fence for lease's election, if the lease is still held.
func (f *fence) lead(lease int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leading = lease == f.lease && time.Now().Before(f.until)
	return f.leading
}

// close shuts the fence at once: no write is allowed until the next lead.
func (f *fence) close() {
	f.mu.Lock()
	f.leading = false
	f.mu.Unlock()
}

// open says whether a write may commit now.
func (f *fence) open() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leading && time.Now().Before(f.until)
}
