package limits

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"petstore/testkit/redistest"
)

// One conformance suite, run against every store as ulule/limiter runs its
// own: the same requests, the same decisions.

// storeDriver is a store under test.
type storeDriver struct {
	// url is --ratelimit-redis for the store; "" counts in memory.
	url string
	// shared: limiters on the same url and prefix share one quota.
	shared bool
	// fail makes the store's backend fail (a crash); recover brings it, or
	// its replacement, back. nil for a store that cannot fail.
	fail, recover func(t *testing.T)
}

// suiteLedger is a Ledger in memory that keeps the bans it saved.
type suiteLedger struct {
	mu     sync.Mutex
	bans   map[string]time.Time
	served map[string]int64
}

func (s *suiteLedger) SaveBan(keyID string, until time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bans == nil {
		s.bans = map[string]time.Time{}
	}
	s.bans[keyID] = until
	return nil
}

func (s *suiteLedger) Served(time.Time) (map[string]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.served), nil
}

func (s *suiteLedger) setServed(windows string, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.served = map[string]int64{windows: n}
}

func (s *suiteLedger) banCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bans)
}

// testClock is the limiters' clock, moved by the test.
type testClock struct{ ms atomic.Int64 }

func newTestClock(t time.Time) *testClock {
	c := &testClock{}
	c.set(t)
	return c
}

func (c *testClock) now() time.Time      { return time.UnixMilli(c.ms.Load()) }
func (c *testClock) set(t time.Time)     { c.ms.Store(t.UnixMilli()) }
func (c *testClock) add(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// suiteCase is one case's limiters: all on the driver's backend, with one
// prefix of their own, one ledger and one clock.
type suiteCase struct {
	t      *testing.T
	d      storeDriver
	cfg    Config
	ledger *suiteLedger
	clock  *testClock
}

var suitePrefixes atomic.Int64

func newSuiteCase(t *testing.T, d storeDriver, start time.Time) *suiteCase {
	clock := newTestClock(start)
	cfg := Config{Redis: redisOf(t, d.url), AnonymousPerMinute: 2, GuestPerMinute: 3, Now: clock.now,
		Prefix: fmt.Sprintf("suite-%d-%d", time.Now().UnixNano(), suitePrefixes.Add(1))}
	return &suiteCase{t: t, d: d, cfg: cfg, ledger: &suiteLedger{}, clock: clock}
}

// limiter is one more instance.
func (c *suiteCase) limiter() *Limiter {
	c.t.Helper()
	l, err := New(c.cfg, c.ledger, slog.New(slog.DiscardHandler))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { l.Close() })
	return l
}

func take(t *testing.T, l *Limiter, key Key) Decision {
	t.Helper()
	d, err := l.TakeKey(context.Background(), key)
	if err != nil {
		t.Fatalf("TakeKey: %v", err)
	}
	return d
}

// expect checks a decision: admitted or not, and what its minute and day
// windows have left.
func expect(t *testing.T, what string, d Decision, admitted bool, minuteLeft, dayLeft int64) {
	t.Helper()
	if d.Exceeded() == admitted || d.Windows[0].Remaining != minuteLeft || d.Windows[1].Remaining != dayLeft {
		t.Fatalf("%s: admitted %v, minute r=%d, day r=%d; want admitted %v, minute r=%d, day r=%d",
			what, !d.Exceeded(), d.Windows[0].Remaining, d.Windows[1].Remaining, admitted, minuteLeft, dayLeft)
	}
}

var suiteNoon = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func testStore(t *testing.T, d storeDriver) {
	t.Run("minute window exact at its edge", func(t *testing.T) {
		c := newSuiteCase(t, d, suiteNoon)
		l := c.limiter()
		key := Key{ID: "minute", Quota: Quota{PerMinute: 3, PerDay: 100}}
		for i := range 3 {
			expect(t, fmt.Sprintf("request %d", i+1), take(t, l, key), true, int64(2-i), int64(99-i))
		}
		over := take(t, l, key)
		expect(t, "the 4th", over, false, 0, 97)
		if !over.Windows[0].Reached || over.Windows[1].Reached || !over.Windows[0].Reset.Equal(suiteNoon.Add(time.Minute)) {
			t.Fatalf("the 4th: %+v, want the minute reached, resetting at %v", over.Windows, suiteNoon.Add(time.Minute))
		}
		c.clock.set(suiteNoon.Add(time.Minute - time.Millisecond))
		expect(t, "a ms before the window ends", take(t, l, key), false, 0, 97)
		c.clock.set(suiteNoon.Add(time.Minute))
		expect(t, "as the window ends", take(t, l, key), true, 2, 96)
	})

	t.Run("day window exact at midnight UTC", func(t *testing.T) {
		midnight := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
		c := newSuiteCase(t, d, midnight.Add(-time.Second))
		l := c.limiter()
		key := Key{ID: "day", Quota: Quota{PerMinute: 100, PerDay: 3}}
		for i := range 3 {
			expect(t, fmt.Sprintf("request %d", i+1), take(t, l, key), true, int64(99-i), int64(2-i))
		}
		over := take(t, l, key)
		expect(t, "the 4th", over, false, 97, 0)
		if !over.Windows[1].Reached || !over.Windows[1].Reset.Equal(midnight) {
			t.Fatalf("the 4th: %+v, want the day reached, resetting at midnight", over.Windows)
		}
		c.clock.set(midnight.Add(-time.Millisecond))
		expect(t, "a ms before midnight", take(t, l, key), false, 97, 0)
		c.clock.set(midnight)
		// The minute window goes on across midnight.
		expect(t, "at midnight", take(t, l, key), true, 96, 2)
	})

	// A quota of 2 a minute bans at MinBanAfter rejections, not at 2: a
	// client retrying to read Retry-After is no abuser.
	t.Run("bans at the threshold, lifted by staff", func(t *testing.T) {
		c := newSuiteCase(t, d, suiteNoon)
		l := c.limiter()
		key := Key{ID: "ban", Quota: Quota{PerMinute: 2, PerDay: 100, BanFor: 10 * time.Minute}}
		take(t, l, key)
		take(t, l, key)
		for i := 1; i < MinBanAfter; i++ {
			if d := take(t, l, key); !d.Exceeded() || d.Banned() {
				t.Fatalf("rejection %d: %+v, want refused, not banned", i, d)
			}
		}
		d := take(t, l, key)
		if !d.Banned() || !d.BannedUntil.Equal(suiteNoon.Add(10*time.Minute)) || c.ledger.banCount() != 1 {
			t.Fatalf("rejection %d: banned until %v, %d bans saved; want banned until %v, saved once",
				MinBanAfter, d.BannedUntil, c.ledger.banCount(), suiteNoon.Add(10*time.Minute))
		}
		// Banned at once, before the ledger's ban is read, and after.
		if d := take(t, l, key); !d.Banned() || d.Windows[0].Remaining != 0 {
			t.Fatalf("before the ledger is read: %+v, want banned", d)
		}
		key.BannedUntil = c.ledger.bans[key.ID]
		if d := take(t, l, key); !d.Banned() || c.ledger.banCount() != 1 {
			t.Fatalf("banned in the ledger: %+v, %d bans; want banned, saved once", d, c.ledger.banCount())
		}
		c.clock.add(time.Second)
		key.BannedUntil, key.BanLifted = time.Time{}, c.clock.now()
		expect(t, "after staff lift the ban", take(t, l, key), true, 1, 97)
	})

	// Two keys of a customer counted per customer share its windows, on
	// one instance or across two; a key of the same customer counted per
	// key (its own quota) keeps windows of its own.
	t.Run("keys of a customer share its windows, exact at their edge", func(t *testing.T) {
		c := newSuiteCase(t, d, suiteNoon)
		first := c.limiter()
		second := first
		if d.shared {
			second = c.limiter()
		}
		quota := Quota{PerMinute: 3, PerDay: 5}
		a := Key{ID: "production", Customer: "acme", Quota: quota}
		b := Key{ID: "staging", Customer: "acme", Quota: quota}
		expect(t, "a 1", take(t, first, a), true, 2, 4)
		expect(t, "b 1", take(t, second, b), true, 1, 3)
		expect(t, "a 2", take(t, first, a), true, 0, 2)
		expect(t, "b 2, the 4th of the minute", take(t, second, b), false, 0, 2)
		expect(t, "a key of acme counted per key", take(t, first, Key{ID: "partner", Quota: quota}), true, 2, 4)
		expect(t, "a key named as acme's windows", take(t, first, Key{ID: "acme", Quota: quota}), true, 2, 4)
		c.clock.set(suiteNoon.Add(time.Minute - time.Millisecond))
		expect(t, "a, a ms before the minute ends", take(t, first, a), false, 0, 2)
		c.clock.set(suiteNoon.Add(time.Minute))
		expect(t, "b as the minute ends", take(t, second, b), true, 2, 1)
		expect(t, "a", take(t, first, a), true, 1, 0)
		expect(t, "b, the 6th of the day", take(t, second, b), false, 1, 0)
	})

	// A plan that starts counting per customer in the middle of a day: a
	// customer's day window starts from what the ledger says its keys were
	// served, read off the request's path when the instance first counts in
	// a customer's windows (here another customer's, so that the read ends
	// before acme's first request).
	t.Run("a customer's day window starts from what its keys were served", func(t *testing.T) {
		c := newSuiteCase(t, d, suiteNoon)
		l := c.limiter()
		c.ledger.setServed(CustomerWindows("acme"), 3)
		quota := Quota{PerMinute: 100, PerDay: 10}
		expect(t, "another customer's first request", take(t, l, Key{ID: "other", Customer: "globex", Quota: quota}), true, 99, 9)
		local, ok := l.store.(*memoryStore)
		if r, isRedis := l.store.(*redisStore); isRedis {
			local, ok = r.local, true
		}
		if !ok {
			t.Fatalf("store %T", l.store)
		}
		deadline := time.Now().Add(10 * time.Second)
		for local.rereading.Load() != 0 {
			if time.Now().After(deadline) {
				t.Fatal("the ledger is not read")
			}
			time.Sleep(time.Millisecond)
		}
		key := Key{ID: "production", Customer: "acme", Quota: quota}
		expect(t, "acme's first request, after the ledger's 3", take(t, l, key), true, 99, 6)
	})

	t.Run("refused requests count in no window", func(t *testing.T) {
		c := newSuiteCase(t, d, suiteNoon)
		l := c.limiter()
		key := Key{ID: "free", Quota: Quota{PerMinute: 1, PerDay: 10}}
		take(t, l, key)
		for range 5 {
			expect(t, "refused", take(t, l, key), false, 0, 9)
		}
		c.clock.add(time.Minute)
		expect(t, "the next minute", take(t, l, key), true, 0, 8)
	})

	t.Run("keyless callers grouped by network", func(t *testing.T) {
		c := newSuiteCase(t, d, suiteNoon)
		l := c.limiter()
		ctx := context.Background()
		anonymous := func(ip string, peek bool) Decision {
			t.Helper()
			f := l.TakeAnonymous
			if peek {
				f = l.PeekAnonymous
			}
			d, err := f(ctx, ip)
			if err != nil {
				t.Fatal(err)
			}
			if r := d.Windows[0].Reset.Sub(d.At); r <= 0 || r > time.Minute+time.Second {
				t.Fatalf("%s: resets in %v", ip, r)
			}
			return d
		}
		for i, step := range []struct {
			ip         string
			peek, pass bool
			left       int64
		}{
			{"2001:db8::1", false, true, 1},
			{"2001:db8::2", true, true, 1}, // a peek counts nothing
			{"2001:db8::2", false, true, 0},
			{"2001:db8::ffff:1", false, false, 0}, // the same /64
			{"2001:db8:0:1::1", false, true, 1},   // the next /64
			{"::ffff:192.0.2.1", false, true, 1},
			{"192.0.2.1", false, true, 0}, // the same IPv4 address
			{"192.0.2.1", false, false, 0},
			{"192.0.2.2", false, true, 1},
		} {
			d := anonymous(step.ip, step.peek)
			if d.Exceeded() == step.pass || d.Windows[0].Remaining != step.left {
				t.Fatalf("step %d (%s): %+v; want passed %v with %d left", i, step.ip, d.Windows[0], step.pass, step.left)
			}
		}
	})

	t.Run("guests count apart from /v1's keyless callers", func(t *testing.T) {
		c := newSuiteCase(t, d, suiteNoon)
		l := c.limiter()
		ctx := context.Background()
		guest := func(ip string) Decision {
			t.Helper()
			d, err := l.TakeGuest(ctx, ip)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		for i := range 3 {
			if d := guest("2001:db8::1"); d.Exceeded() || d.Windows[0].Remaining != int64(2-i) {
				t.Fatalf("guest request %d: %+v", i, d.Windows[0])
			}
		}
		if d := guest("2001:db8::2"); !d.Exceeded() || d.RetryAfter() < 1 {
			t.Fatalf("the /64's fourth guest request: %+v, retry after %d", d.Windows[0], d.RetryAfter())
		}
		if d, err := l.TakeAnonymous(ctx, "2001:db8::1"); err != nil || d.Exceeded() || d.Windows[0].Remaining != 1 {
			t.Fatalf("/v1 after the guest window is full: %+v, %v", d, err)
		}
		if d := guest("2001:db8:0:1::1"); d.Exceeded() {
			t.Fatalf("the next /64: %+v", d.Windows[0])
		}
	})

	if d.shared {
		t.Run("instances share one quota", func(t *testing.T) {
			c := newSuiteCase(t, d, suiteNoon)
			a, b := c.limiter(), c.limiter()
			key := Key{ID: "shared", Quota: Quota{PerMinute: 4, PerDay: 100}}
			expect(t, "a 1", take(t, a, key), true, 3, 99)
			expect(t, "b 1", take(t, b, key), true, 2, 98)
			expect(t, "a 2", take(t, a, key), true, 1, 97)
			expect(t, "b 2", take(t, b, key), true, 0, 96)
			expect(t, "a 3", take(t, a, key), false, 0, 96)
			expect(t, "b 3", take(t, b, key), false, 0, 96)
		})
	}

	if d.fail != nil {
		t.Run("counts locally while the store fails, and gives it the counts back", func(t *testing.T) {
			c := newSuiteCase(t, d, suiteNoon)
			a, b := c.limiter(), c.limiter()
			key := Key{ID: "failover", Quota: Quota{PerMinute: 5, PerDay: 100}}
			expect(t, "a before", take(t, a, key), true, 4, 99)
			d.fail(t)
			// a goes on from what Redis said; b, which never saw the key,
			// starts a window of its own 10 s later.
			expect(t, "a in the gap", take(t, a, key), true, 3, 98)
			expect(t, "a in the gap", take(t, a, key), true, 2, 97)
			c.clock.add(10 * time.Second)
			for i := range 4 {
				expect(t, "b in the gap", take(t, b, key), true, int64(4-i), int64(99-i))
			}
			for name, l := range map[string]*Limiter{"a": a, "b": b} {
				if l.Counting() != "local" || l.RedisLost() != 1 {
					t.Fatalf("%s in the gap: counting %q, lost %d; want local, 1", name, l.Counting(), l.RedisLost())
				}
			}
			d.recover(t)
			for name, l := range map[string]*Limiter{"a": a, "b": b} {
				waitForRedis(t, name, l)
			}
			// The gap's 7 requests are in the store's windows: the minute
			// admits nothing more, and the day has 93 left.
			expect(t, "a after", take(t, a, key), false, 0, 93)
			expect(t, "b after", take(t, b, key), false, 0, 93)
		})
	}
}

// waitForRedis waits until l counts in Redis again.
func waitForRedis(t *testing.T, name string, l *Limiter) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for l.Counting() != "redis" {
		if time.Now().After(deadline) {
			t.Fatalf("%s does not count in Redis again", name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// slowMachineTimeouts: the machines running tests are shared and slow.
const slowMachineTimeouts = "dial_timeout=1s&read_timeout=1s&write_timeout=1s&pool_timeout=5s"

func TestMemoryStore(t *testing.T) { testStore(t, storeDriver{}) }

func TestRedisStore(t *testing.T) {
	srv := redistest.Start(t)
	testStore(t, storeDriver{
		url: srv.URL(0) + "?" + slowMachineTimeouts, shared: true,
		fail:    func(*testing.T) { srv.Stop() },
		recover: func(t *testing.T) { srv.Restart(t) }, // empty: it lost every count
	})
}

func TestRedisSentinelStore(t *testing.T) {
	hs := redistest.StartSentinel(t)
	var old string
	testStore(t, storeDriver{
		url: hs.URL(0) + "&" + slowMachineTimeouts, shared: true,
		fail: func(t *testing.T) {
			old = hs.MasterAddr(t)
			hs.Primary.Stop()
		},
		recover: func(t *testing.T) { hs.WaitForFailover(t, old) },
	})
}

// A Redis Cluster of 3 masters, each with a replica: the failover case
// kills the master of its key's slot (kill -9), and the replica takes over.
func TestRedisClusterStore(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, 1)
	var dead *redistest.Server
	testStore(t, storeDriver{
		url: cluster.URL() + "&" + slowMachineTimeouts, shared: true,
		fail: func(t *testing.T) {
			dead = cluster.MasterFor(t, "failover") // the hash tag of the case's key
			dead.Stop()
		},
		recover: func(t *testing.T) { cluster.WaitForFailover(t, dead) },
	})
}

// Redis over TLS (rediss://), trusting the test's CA through tls_ca_file.
func TestRedisTLSStore(t *testing.T) {
	srv, caFile := redistest.StartTLS(t)
	testStore(t, storeDriver{
		url: srv.URL(0) + "?tls_ca_file=" + caFile + "&" + slowMachineTimeouts, shared: true,
		fail:    func(*testing.T) { srv.Stop() },
		recover: func(t *testing.T) { srv.Restart(t) },
	})
}
