package cluster

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// memEtcd is an in-memory stand-in for etcd's election: keys under one
// prefix, each with the revision it was created at; the first is the
// leader's. Every change wakes the campaigns and the guards.
type memEtcd struct {
	mu      sync.Mutex
	rev     int64
	keys    map[string]int64 // key → create revision
	changed chan struct{}    // closed and replaced at every change
}

func newMemEtcd() *memEtcd {
	return &memEtcd{keys: map[string]int64{}, changed: make(chan struct{})}
}

// change applies f under the lock, and wakes the waiters.
func (m *memEtcd) change(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f()
	close(m.changed)
	m.changed = make(chan struct{})
}

// first is the election's first key; empty: none.
func (m *memEtcd) first() (key string, rev int64) {
	for k, r := range m.keys {
		if key == "" || r < rev {
			key, rev = k, r
		}
	}
	return key, rev
}

// has says whether key is in the election.
func (m *memEtcd) has(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.keys[key]
	return ok
}

// del deletes key, as `etcdctl del` would.
func (m *memEtcd) del(key string) { m.change(func() { delete(m.keys, key) }) }

// memElection is one node's election on a memEtcd, as concurrency.Election
// behaves: Campaign puts the node's key and waits until it is the first;
// its context's end deletes the key.
type memElection struct {
	m   *memEtcd
	key string
	rev int64
}

func (e *memElection) Campaign(ctx context.Context, _ string) error {
	e.m.change(func() {
		if _, ok := e.m.keys[e.key]; !ok {
			e.m.rev++
			e.m.keys[e.key] = e.m.rev
		}
		e.rev = e.m.keys[e.key]
	})
	for {
		e.m.mu.Lock()
		first, _ := e.m.first()
		changed := e.m.changed
		e.m.mu.Unlock()
		if first == e.key {
			return nil
		}
		select {
		case <-ctx.Done():
			e.m.del(e.key)
			return ctx.Err()
		case <-changed:
		}
	}
}

func (e *memElection) Proclaim(context.Context, string) error {
	if !e.m.has(e.key) {
		return errors.New("the election key is gone")
	}
	return nil
}

func (e *memElection) Resign(context.Context) error { e.m.del(e.key); return nil }
func (e *memElection) Rev() int64                   { return e.rev }
func (e *memElection) Key() string                  { return e.key }

// guard returns when key is deleted, as Node.guardKeys does.
func (e *memElection) guard(ctx context.Context, key string, _, _ int64) error {
	for {
		e.m.mu.Lock()
		_, ok := e.m.keys[key]
		changed := e.m.changed
		e.m.mu.Unlock()
		if !ok {
			return errors.New("its election key was deleted")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// memNode is a node whose HA loop runs on a memEtcd and a fake clock.
type memNode struct {
	*Node
	clock    *fakeClock
	loop     *haLoop
	election *memElection
	cancel   context.CancelFunc
	ended    chan error
	// eligible is what the node's data says; nil: eligible.
	eligibleMu  sync.Mutex
	eligible    error
	elected     chan int64
	steppedDown chan int64
}

const memTTL = 2 * time.Second

// startMemNode runs name's HA loop for one session on m, its lease granted
// at 0 on its own fake clock.
func startMemNode(t *testing.T, m *memEtcd, name string) *memNode {
	t.Helper()
	mn := &memNode{clock: &fakeClock{}, ended: make(chan error, 1), elected: make(chan int64, 1), steppedDown: make(chan int64, 1)}
	cfg := Config{Name: "mem", NodeName: name, AdvertiseURL: "http://" + name, TTL: memTTL}
	mn.Node = New(cfg, slog.New(slog.DiscardHandler), Options{
		Eligible: func() error {
			mn.eligibleMu.Lock()
			defer mn.eligibleMu.Unlock()
			return mn.eligible
		},
		OnElected:     func(term int64) { mn.elected <- term },
		OnSteppedDown: func(term int64) { mn.steppedDown <- term },
	})
	mn.fence.now = mn.clock.now
	mn.fence.newLease(1, 0, memTTL)
	mn.lease = 1
	mn.election = &memElection{m: m, key: "leader/" + name}
	ctx, cancel := context.WithCancel(context.Background())
	mn.cancel = cancel
	var tasks sync.WaitGroup
	mn.loop = &haLoop{n: mn.Node, ctx: ctx, tasks: &tasks, election: mn.election, lease: 1,
		sessionDone: make(chan struct{}), sessionLost: make(chan error), guard: mn.election.guard,
		depose:   func(context.Context) error { return nil },
		keysLost: make(chan error, 1), servingSignal: make(chan chan struct{}), giveUp: make(chan error), done: make(chan struct{})}
	go func() {
		err := mn.loop.run()
		tasks.Wait()
		mn.ended <- err
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-mn.ended:
		case <-time.After(5 * time.Second):
			t.Errorf("%s's HA loop did not end within 5 s of its stop", name)
		}
	})
	return mn
}

func (mn *memNode) setEligible(why error) {
	mn.eligibleMu.Lock()
	mn.eligible = why
	mn.eligibleMu.Unlock()
	mn.poke()
}

// serve does what a promotion ends with: the fence opens, and the loop
// records that the node serves.
func (mn *memNode) serve(t *testing.T) {
	t.Helper()
	if !mn.fence.lead(1) {
		t.Fatalf("%s: the fence does not open", mn.cfg.NodeName)
	}
	served := make(chan struct{})
	mn.loop.servingSignal <- served
	<-served
}

// waitState waits until the node is in state s.
func (mn *memNode) waitState(t *testing.T, s State) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for mn.State() != s {
		if time.Now().After(deadline) {
			t.Fatalf("%s is %s after 5 s, want %s", mn.cfg.NodeName, mn.State(), s)
		}
		time.Sleep(time.Millisecond)
	}
}

// within receives from ch, failing the test after 5 s.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: not within 5 s", what)
		panic("unreachable")
	}
}

// leading is how many of nodes may write now.
func leading(nodes ...*memNode) (n int) {
	for _, mn := range nodes {
		if mn.MayWrite() {
			n++
		}
	}
	return n
}

// TestHALoopOnAnInMemoryEtcd drives two nodes' HA loops through an
// election, a deleted election key, a lease that lapses and a copy that
// falls behind, on an in-memory etcd and fake clocks: never two writers.
func TestHALoopOnAnInMemoryEtcd(t *testing.T) {
	m := newMemEtcd()
	a := startMemNode(t, m, "a")
	term := within(t, a.elected, "a elected")
	a.waitState(t, Promoting)
	if a.MayWrite() || a.Status().Role != Candidate {
		t.Fatalf("a promoting: may write %t, role %s; want false, candidate", a.MayWrite(), a.Status().Role)
	}
	a.serve(t)
	a.waitState(t, Leading)
	if !a.MayWrite() || a.Status().Role != Leader || a.Status().Term != term {
		t.Fatalf("a leading: may write %t, status %+v", a.MayWrite(), a.Status())
	}

	b := startMemNode(t, m, "b")
	b.setLeader(&LeaderInfo{Node: "a", URL: "http://a", Term: term}) // what b's observer reads
	b.waitState(t, Following)
	if !m.has("leader/b") || b.Status().Role != Follower || leading(a, b) != 1 {
		t.Fatalf("b following: in the election %t, role %s, writers %d", m.has("leader/b"), b.Status().Role, leading(a, b))
	}

	// b's copy falls behind: it leaves the election, and returns once
	// caught up.
	b.setEligible(errors.New("its copy lags 12s behind the leader"))
	b.waitState(t, CatchingUp)
	if m.has("leader/b") {
		t.Fatal("b catching up is still in the election")
	}
	b.setEligible(nil)
	b.waitState(t, Following)
	if !m.has("leader/b") {
		t.Fatal("b caught up is not back in the election")
	}

	// An operator deletes a's election key: a is fenced and steps down at
	// once; b wins, and serves only after a stopped writing.
	m.del("leader/a")
	if got := within(t, a.steppedDown, "a steps down after its key's deletion"); got != term {
		t.Fatalf("a stepped down from term %d, want %d", got, term)
	}
	if a.MayWrite() || a.State() != Fenced {
		t.Fatalf("a after its key's deletion: may write %t, %s; want fenced", a.MayWrite(), a.State())
	}
	if err := within(t, a.ended, "a's session ends"); err == nil || err.Error() != "its election key was deleted" {
		t.Fatalf("a's session ended with %v, want the key's deletion", err)
	}
	a.ended <- nil // for the cleanup
	termB := within(t, b.elected, "b elected")
	b.waitState(t, Promoting)
	b.serve(t)
	b.waitState(t, Leading)
	if leading(a, b) != 1 || termB <= term {
		t.Fatalf("writers %d, b's term %d after a's %d", leading(a, b), termB, term)
	}

	// b's renewals stop reaching etcd: one tick past the lease's provable
	// end, b is fenced and steps down, without a word from etcd.
	b.clock.set(memTTL - driftMargin(memTTL) - time.Millisecond)
	b.poke()
	time.Sleep(20 * time.Millisecond)
	if b.State() != Leading || !b.MayWrite() {
		t.Fatalf("b a millisecond before its lease's provable end: %s, may write %t", b.State(), b.MayWrite())
	}
	b.clock.set(memTTL - driftMargin(memTTL))
	if b.MayWrite() {
		t.Fatal("b may write at its lease's provable end")
	}
	b.poke()
	if got := within(t, b.steppedDown, "b steps down past its lease's end"); got != termB {
		t.Fatalf("b stepped down from term %d, want %d", got, termB)
	}
	if s := b.State(); s != Fenced {
		t.Fatalf("b past its lease's end is %s, want fenced", s)
	}
	if leading(a, b) != 0 {
		t.Fatalf("writers %d after both stepped down", leading(a, b))
	}
}
