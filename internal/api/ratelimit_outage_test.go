package api_test

import (
	"net/http"
	"testing"
	"time"

	"petstore/internal/apikeys"
	"petstore/testkit/apptest"
	"petstore/testkit/redistest"
)

// No Redis failure hands out a second quota: a hang (SIGSTOP), a storm of
// timeouts, a kill -9 and a restart that comes back empty. One instance
// admits exactly its quota across each; N instances at most N times it in a
// window that spans the outage, and exactly the quota once Redis is back.

// An outage of a test's own redis-server.
type outage struct {
	name       string
	begin, end func(t *testing.T, srv *redistest.Server)
}

var outages = []outage{
	{"SIGSTOP",
		func(t *testing.T, srv *redistest.Server) { check(t, srv.Pause()) },
		func(t *testing.T, srv *redistest.Server) { check(t, srv.Resume()) }},
	{"kill -9 and restarted empty",
		func(t *testing.T, srv *redistest.Server) { srv.Stop() },
		func(t *testing.T, srv *redistest.Server) { srv.Restart(t) }},
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// quotaWindow is a key whose given window binds, with quota requests.
type quotaWindow struct {
	name string
	key  func(quota int) apikeys.NewKey
}

var quotaWindows = []quotaWindow{
	{"day", func(quota int) apikeys.NewKey { return apikeys.NewKey{Plan: "free", PerMinute: 1 << 30, PerDay: quota} }},
	{"minute", func(quota int) apikeys.NewKey { return apikeys.NewKey{Plan: "free", PerMinute: quota, PerDay: 1 << 30} }},
}

// withoutBans turns the free plan's bans off: what these tests count is
// what the windows admit, and a ban would refuse on top of them.
func withoutBans(t *testing.T, s *apptest.Server) {
	t.Helper()
	plan, err := s.App.FindFirstRecordByData("plans", "name", "free")
	if err != nil {
		t.Fatal(err)
	}
	plan.Set("ban_minutes", 0)
	if err := s.App.Save(plan); err != nil {
		t.Fatal(err)
	}
}

// served sends n requests of key one after the other, each to the next
// server in turn, and returns how many were served: the others must be
// refused for the rate limit, with its headers.
func served(t *testing.T, servers []*apptest.Server, key string, n int) int {
	t.Helper()
	count := 0
	for i := range n {
		r := servers[i%len(servers)].Do(t, http.MethodGet, "/v1/pets", key, nil)
		if r.StatusCode == http.StatusOK {
			rateHeaders(t, r)
			count++
			continue
		}
		retryAfter(t, r, "rate_limit_exceeded")
	}
	return count
}

func TestRedisOutageOneInstanceAdmitsExactlyItsQuota(t *testing.T) {
	const quota = 40
	for _, o := range outages {
		for _, w := range quotaWindows {
			t.Run(o.name+", "+w.name+" window", func(t *testing.T) {
				srv := redistest.Start(t)
				servers := instancesOn(t, 1, srv.URL(0)+"?"+slowMachineTimeouts)
				withoutBans(t, servers[0])
				key := servers[0].NewKey(t, w.key(quota))

				if n := served(t, servers, key, 10); n != 10 {
					t.Fatalf("before the outage: %d served, want 10", n)
				}
				o.begin(t, srv)
				// Redis answers nothing: what is served now is decided in memory.
				if n := served(t, servers, key, 20); n != 20 {
					t.Fatalf("during the outage: %d served, want 20", n)
				}
				o.end(t, srv)
				waitUntilCountingIn(t, servers, srv.Addr)
				if n := served(t, servers, key, 20); n != 10 {
					t.Fatalf("once Redis is back: %d served, want the 10 left of the quota of %d: %d in all",
						n, quota, 30+n)
				}
			})
		}
	}
}

// A storm of timeouts: Redis hangs for 300 ms, answers for 300 ms, and so
// on, while the client waits at most 100 ms for it. Calls time out, and
// Redis runs many of them later; the instance switches between Redis and
// its memory several times. It still serves exactly its quota: the storm
// leaves some of it, and what it leaves is served after it, no more, no
// less.
func TestRedisTimeoutStormOneInstanceAdmitsExactlyItsQuota(t *testing.T) {
	const quota = 2000
	srv := redistest.Start(t)
	servers := instancesOn(t, 1, srv.URL(0)+"?dial_timeout=100ms&read_timeout=100ms&write_timeout=100ms")
	withoutBans(t, servers[0])
	key := servers[0].NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 1 << 30, PerDay: quota})

	stormOver := make(chan error, 1)
	go func() {
		var err error
		for i := 0; i < 8 && err == nil; i++ {
			if err = srv.Pause(); err == nil {
				time.Sleep(300 * time.Millisecond)
				err = srv.Resume()
			}
			time.Sleep(300 * time.Millisecond)
		}
		stormOver <- err
	}()
	during, sent := 0, 0
	for storm := true; storm; sent++ {
		select {
		case err := <-stormOver:
			check(t, err)
			storm = false
		default:
		}
		during += served(t, servers, key, 1)
		time.Sleep(5 * time.Millisecond)
	}
	if during != sent {
		t.Fatalf("during the storm: %d served of %d sent, want all (the quota is %d)", during, sent, quota)
	}
	waitUntilCountingIn(t, servers, srv.Addr)
	after := served(t, servers, key, quota-during+10)
	if during+after != quota {
		t.Fatalf("%d served during the storm (of %d sent) and %d after: %d, want exactly the quota %d",
			during, sent, after, during+after, quota)
	}
	t.Logf("%d requests during the storm, %d served; %d served after it", sent, during, after)
}

func TestRedisOutageTwoInstancesAdmitAtMostTwiceTheQuota(t *testing.T) {
	const quota = 40
	for _, o := range outages {
		for _, w := range quotaWindows {
			t.Run(o.name+", "+w.name+" window", func(t *testing.T) {
				srv := redistest.Start(t)
				servers := instancesOn(t, 2, srv.URL(0)+"?"+slowMachineTimeouts)
				withoutBans(t, servers[0])
				key := servers[0].NewKey(t, w.key(quota))

				before := served(t, servers, key, 10)
				o.begin(t, srv)
				during := served(t, servers, key, 2*quota)
				o.end(t, srv)
				waitUntilCountingIn(t, servers, srv.Addr)
				after := served(t, servers, key, 20)
				total := before + during + after
				t.Logf("served: %d before the outage, %d during it, %d after it", before, during, after)
				if before != 10 || total < quota || total > 2*quota || after != 0 {
					t.Fatalf("served %d before, %d during, %d after the outage (%d in all): want 10 before, "+
						"from %d to %d in all, and none once Redis has what the instances counted", before, during, after, total, quota, 2*quota)
				}

				// Once Redis is back, a window is shared again: exactly the quota.
				fresh := servers[0].NewKey(t, w.key(quota))
				if n := served(t, servers, fresh, quota+10); n != quota {
					t.Fatalf("a new key once Redis is back: %d served, want exactly %d", n, quota)
				}
			})
		}
	}
}
