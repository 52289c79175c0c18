package cluster

import (
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Duration
}

func (c *fakeClock) now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t += d
	c.mu.Unlock()
}

// set moves the clock to t, which is not before now.
func (c *fakeClock) set(t time.Duration) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

const (
	fenceTTL = 2 * time.Second
	// tick is the clock's smallest step.
	tick = time.Nanosecond
)

// leadingFence is a fence whose node leads with lease 1, granted for
// fenceTTL at 0: provably held until 1.75 s.
func leadingFence(t *testing.T) (*fence, *fakeClock) {
	t.Helper()
	clk := &fakeClock{}
	f := &fence{now: clk.now}
	f.newLease(1, 0, fenceTTL)
	if f.open() {
		t.Fatal("the fence is open before the node leads")
	}
	if !f.lead(1) || !f.open() || !f.held() {
		t.Fatal("the fence does not open for a lease just granted")
	}
	return f, clk
}

func TestFenceClosesAtTheLeasesProvableEnd(t *testing.T) {
	f, clk := leadingFence(t)
	end := fenceTTL - driftMargin(fenceTTL)
	if end != 1750*time.Millisecond {
		t.Fatalf("provable end %s, want 1.75 s (TTL 2 s less 250 ms)", end)
	}
	clk.set(end - tick)
	if !f.open() || f.untilEnd() != tick {
		t.Fatalf("one tick before the end: open %v, %s left", f.open(), f.untilEnd())
	}
	clk.set(end)
	if f.open() || f.held() || f.untilEnd() != 0 {
		t.Fatalf("at the end: open %v, held %v, %s left", f.open(), f.held(), f.untilEnd())
	}
}

func TestFenceRenewedOnTimeStaysOpen(t *testing.T) {
	f, clk := leadingFence(t)
	// Each renewal is answered a tick before the next is sent (the
	// renewals' timeout): the fence stays open throughout.
	interval := fenceTTL / 3
	for i := 1; i <= 30; i++ {
		sent := time.Duration(i) * interval
		clk.set(sent)
		if !f.open() {
			t.Fatalf("closed at %s, renewed every %s", sent, interval)
		}
		clk.set(sent + interval - tick)
		f.renewed(1, sent, fenceTTL)
		if !f.open() {
			t.Fatalf("closed at %s, renewed every %s", clk.now(), interval)
		}
	}
}

func TestFenceRenewalLateByOneTick(t *testing.T) {
	end := fenceTTL - driftMargin(fenceTTL)

	// Sent one tick after the deadline: the fence closed at the deadline
	// and stays closed, though etcd renewed the lease.
	f, clk := leadingFence(t)
	clk.set(end + tick)
	f.renewed(1, end+tick, fenceTTL)
	if f.open() || f.held() {
		t.Fatalf("a renewal sent one tick late reopened the fence: open %v, held %v", f.open(), f.held())
	}

	// Sent in time, answered one tick after the deadline: the same.
	f, clk = leadingFence(t)
	clk.set(end)
	f.renewed(1, end-time.Second, fenceTTL)
	if f.open() || f.held() {
		t.Fatalf("a renewal answered one tick late reopened the fence: open %v, held %v", f.open(), f.held())
	}
	if f.lead(1) {
		t.Fatal("a lease past its deadline leads again")
	}

	// A follower's lease (its fence has never opened) renewed late is held
	// again: etcd still had it, so no other node took the election.
	clk = &fakeClock{}
	f = &fence{now: clk.now}
	f.newLease(1, 0, fenceTTL)
	clk.set(end + tick)
	f.renewed(1, end+tick, fenceTTL)
	if !f.held() || f.open() {
		t.Fatalf("a follower's lease renewed late: held %v, open %v; want held, not open", f.held(), f.open())
	}

	// Answered one tick before the deadline: it moves, without a gap.
	f, clk = leadingFence(t)
	clk.set(end - tick)
	f.renewed(1, end-time.Second, fenceTTL)
	clk.set(end)
	if !f.open() {
		t.Fatal("a renewal in time did not move the deadline")
	}
	if got, want := f.untilEnd(), fenceTTL-driftMargin(fenceTTL)-time.Second; got != want {
		t.Fatalf("%s left after a renewal sent 1 s before the old deadline, want %s", got, want)
	}
}

func TestFencePausedProcessFindsItClosed(t *testing.T) {
	f, clk := leadingFence(t)
	interval := fenceTTL / 3
	clk.set(interval)
	sent := clk.now()
	// The process stops (SIGSTOP, a VM freeze) with a renewal's answer in
	// hand, and resumes 3 TTLs later: the clock has run on.
	clk.advance(3 * fenceTTL)
	if f.open() {
		t.Fatal("the fence is open after a pause past the lease, before any renewal")
	}
	f.renewed(1, sent, fenceTTL)
	if f.open() || f.held() {
		t.Fatal("the renewal answered before the pause reopened the fence after it")
	}
}

func TestFenceLeaseLost(t *testing.T) {
	f, clk := leadingFence(t)
	clk.set(time.Second)
	// The session ends and a new one starts: its lease does not lead yet,
	// and the old lease's renewals change nothing.
	f.newLease(2, time.Second, fenceTTL)
	if f.open() {
		t.Fatal("the fence is open for a new lease that does not lead")
	}
	f.renewed(1, time.Second, fenceTTL)
	if f.lead(1) || f.open() {
		t.Fatal("the lost lease leads again")
	}
	if !f.held() {
		t.Fatal("the new lease is not held")
	}

	// Closed (a handover, the key gone): closed for the rest of its lease,
	// renewed or not.
	if !f.lead(2) {
		t.Fatal("the new lease does not lead")
	}
	f.close()
	f.renewed(2, time.Second+time.Millisecond, fenceTTL)
	if f.open() || f.lead(2) {
		t.Fatal("a closed fence opened again for its lease")
	}
}
