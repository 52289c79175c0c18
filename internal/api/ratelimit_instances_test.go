package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"petstore/internal/apikeys"
	"petstore/internal/limits"
	"petstore/testkit/apptest"
	"petstore/testkit/redistest"
)

// Several instances on one Redis: apps serving one data directory and
// counting in one Redis, as processes behind a load balancer do.

// instancesOn starts n apps on one new data directory, counting in the Redis
// of url.
func instancesOn(t *testing.T, n int, url string) []*apptest.Server {
	t.Helper()
	cfg := limits.Config{Redis: apptest.Redis(t, url)}
	dir := t.TempDir()
	servers := make([]*apptest.Server, n)
	for i := range servers {
		servers[i] = apptest.StartWith(t, apptest.Config{Dir: dir, Limits: cfg})
	}
	return servers
}

// concurrently sends n requests at once, each to the next server in turn,
// and returns the responses (checked here, after the senders are done).
func concurrently(t *testing.T, servers []*apptest.Server, n int, key string) []*apptest.Response {
	t.Helper()
	responses := sendAtOnce(n, func(i int) *apptest.Response {
		return servers[i%len(servers)].Do(t, http.MethodGet, "/v1/pets", key, nil)
	})
	for _, r := range responses {
		rateHeaders(t, r)
	}
	return responses
}

// outcomes counts responses by status and, for errors, code: "200",
// "429 rate_limit_exceeded", ...
func outcomes(t *testing.T, responses []*apptest.Response) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for _, r := range responses {
		if r.StatusCode == http.StatusOK {
			counts["200"]++
			continue
		}
		counts[fmt.Sprintf("%d %s", r.StatusCode, r.Error(t, r.StatusCode).Code)]++
	}
	return counts
}

// N concurrent requests on a key with L requests left in its binding window
// get exactly L successes, with 2 and 3 instances, including when the minute
// and day windows are both down to their last request at once. Each case
// runs several rounds, on fresh keys, to give a race its chances.
func TestRedisExactAcrossInstances(t *testing.T) {
	url := redisURL(t)
	cases := []struct {
		name              string
		perMinute, perDay int
		before            int // requests sent one by one first
		concurrent        int
		rounds            int
	}{
		{"minute window binds", 20, 1000, 0, 60, 2},
		{"day window binds", 1000, 20, 0, 60, 2},
		{"both windows at the same count", 10, 10, 0, 40, 10},
		{"both windows at their last request", 5, 5, 4, 30, 30},
	}
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d instances", n), func(t *testing.T) {
			servers := instancesOn(t, n, url)
			for _, c := range cases {
				for round := range c.rounds {
					key := servers[0].NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: c.perMinute, PerDay: c.perDay})
					for i := range c.before {
						if r := servers[i%n].Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != http.StatusOK {
							t.Fatalf("%s: request %d before: %d", c.name, i, r.StatusCode)
						}
					}
					want := min(c.perMinute, c.perDay) - c.before
					got := outcomes(t, concurrently(t, servers, c.concurrent, key))
					// The refused are over the limit, or banned for it (the
					// ban threshold has a test of its own).
					refused := got["429 rate_limit_exceeded"] + got["429 api_key_banned"]
					if got["200"] != want || refused != c.concurrent-want {
						t.Fatalf("%s, round %d: %v; want exactly %d×200 and %d×429", c.name, round, got, want, c.concurrent-want)
					}
				}
			}
		})
	}
}

// A key is banned at exactly its threshold of rejections, counted across
// instances, and the ban holds on every instance at once.
func TestRedisBanThresholdExactAcrossInstances(t *testing.T) {
	url := redisURL(t)
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d instances", n), func(t *testing.T) {
			servers := instancesOn(t, n, url)
			for round := range 4 {
				// 3 a minute; the free plan bans at limits.MinBanAfter
				// rejections (its quota, 3, is under it).
				key := servers[0].NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 3, PerDay: 1000})
				got := outcomes(t, concurrently(t, servers, 30, key))
				want := map[string]int{"200": 3, "429 rate_limit_exceeded": limits.MinBanAfter - 1, "429 api_key_banned": 30 - 3 - (limits.MinBanAfter - 1)}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("round %d: %v, want %v", round, got, want)
				}
				until := servers[0].KeyRecord(t, key).BannedUntil()
				if left := time.Until(until); left < 14*time.Minute || left > 15*time.Minute {
					t.Fatalf("round %d: banned_until %v, want in about 15 minutes", round, until)
				}
				for _, s := range servers {
					retryAfter(t, s.Do(t, http.MethodGet, "/v1/pets", key, nil), "api_key_banned")
				}
			}
		})
	}
}

// steadyLoad keeps every server busy with requests on one key, one at a time
// per server, and records what a client must never see: a 5xx or a
// transport error.
type steadyLoad struct {
	stop chan struct{}
	done sync.WaitGroup

	mu       sync.Mutex
	sent     int
	failures []string
}

func startLoad(t *testing.T, servers []*apptest.Server, key string) *steadyLoad {
	t.Helper()
	l := &steadyLoad{stop: make(chan struct{})}
	// A plain client: the harness's own fails the test from its goroutine.
	client := &http.Client{Timeout: 30 * time.Second}
	for _, s := range servers {
		l.done.Add(1)
		go func() {
			defer l.done.Done()
			for {
				select {
				case <-l.stop:
					return
				case <-time.After(5 * time.Millisecond): // a steady load, not a flood
				}
				failure := ""
				req, _ := http.NewRequest(http.MethodGet, s.URL+"/v1/pets", nil)
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := client.Do(req)
				if err != nil {
					failure = err.Error()
				} else {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					switch {
					case err != nil:
						failure = "reading the body: " + err.Error()
					case resp.StatusCode >= 500:
						failure = resp.Status
					case resp.Header.Get("X-RateLimit-Remaining") == "":
						failure = resp.Status + " without rate-limit headers"
					}
				}
				l.mu.Lock()
				l.sent++
				if failure != "" {
					l.failures = append(l.failures, failure)
				}
				l.mu.Unlock()
			}
		}()
	}
	t.Cleanup(l.end)
	return l
}

func (l *steadyLoad) end() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.done.Wait()
}

// sentSoFar is how many requests the load has sent.
func (l *steadyLoad) sentSoFar() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sent
}

// check stops the load and fails the test if any request failed.
func (l *steadyLoad) check(t *testing.T) {
	t.Helper()
	l.end()
	if len(l.failures) > 0 {
		t.Fatalf("%d of %d requests under load failed, e.g. %q", len(l.failures), l.sent, l.failures[0])
	}
	t.Logf("%d requests under load, none failed", l.sent)
}

// waitForLoad waits until the load has sent more requests than it had.
func (l *steadyLoad) waitForLoad(t *testing.T, had int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for l.sentSoFar() <= had+10 {
		if time.Now().After(deadline) {
			t.Fatal("the load made no progress")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// expectShared checks that the instances count a key together: a key of 3
// a minute passes 3 times in all. (Its rejections stay under its ban
// threshold, 3.)
func expectShared(t *testing.T, servers []*apptest.Server) {
	t.Helper()
	key := servers[0].NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 3, PerDay: 1000})
	for i := range 3 {
		if r := servers[i%len(servers)].Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != http.StatusOK {
			t.Fatalf("shared counting, request %d: %d", i, r.StatusCode)
		}
	}
	for _, s := range servers {
		retryAfter(t, s.Do(t, http.MethodGet, "/v1/pets", key, nil), "rate_limit_exceeded")
	}
}

// expectPerInstance checks that each instance holds a key's limit on its
// own, and returns the key.
func expectPerInstance(t *testing.T, servers []*apptest.Server) string {
	t.Helper()
	key := servers[0].NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 3, PerDay: 1000})
	for _, s := range servers {
		for i := range 3 {
			if r := s.Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != http.StatusOK {
				t.Fatalf("local counting, request %d: %d", i, r.StatusCode)
			}
		}
		retryAfter(t, s.Do(t, http.MethodGet, "/v1/pets", key, nil), "rate_limit_exceeded")
	}
	return key
}

// waitUntilCountingIn waits until every server counts in the Redis at addr
// again: a fresh key's request shows up there.
func waitUntilCountingIn(t *testing.T, servers []*apptest.Server, addr string) {
	t.Helper()
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	for _, s := range servers {
		key := s.NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 1 << 30, PerDay: 1 << 30})
		counted := limits.DefaultPrefix + ":key:" + s.KeyRecord(t, key).Id + ":*" // the key's day
		deadline := time.Now().Add(time.Minute)
		for {
			if r := s.Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != http.StatusOK {
				t.Fatalf("canary request: %d", r.StatusCode)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			found, err := client.Keys(ctx, counted).Result()
			cancel()
			if err == nil && len(found) == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s does not count in the Redis at %s again (%v)", s.URL, addr, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// Redis Sentinel: the primary dies while two instances serve a steady load.
// Until the failover, each instance counts alone and holds the limits; then
// both count in the new primary again, which gets what they counted
// meanwhile. No client sees a 5xx or a broken connection at any moment.
func TestRedisSentinelFailover(t *testing.T) {
	hs := redistest.StartSentinel(t)
	servers := instancesOn(t, 2, hs.URL(0)+"&"+slowMachineTimeouts)
	load := startLoad(t, servers, servers[0].NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 1 << 30, PerDay: 1 << 30}))
	load.waitForLoad(t, 0)
	expectShared(t, servers)

	old := hs.MasterAddr(t)
	hs.Primary.Stop()
	load.waitForLoad(t, load.sentSoFar())
	gapKey := expectPerInstance(t, servers)

	primary := hs.WaitForFailover(t, old)
	waitUntilCountingIn(t, servers, primary)
	expectShared(t, servers)
	load.waitForLoad(t, load.sentSoFar())

	// The gap's requests, 3 served by each instance alone, are in the new
	// primary's day window: 6.
	r := servers[1].Do(t, http.MethodGet, "/v1/pets", gapKey, nil)
	retryAfter(t, r, "rate_limit_exceeded")
	if day := rateItems(t, r)["day"]; day.r != 1000-6 {
		t.Fatalf("the gap's key after the failover: RateLimit %q, want the day at r=994", r.Header.Get("RateLimit"))
	}
	load.check(t)
}

// Redis restarted, empty, under load: no 5xx, each instance counts alone
// while it is down, counting resumes in Redis, and the day windows come back
// from what the instances knew.
func TestRedisRestartUnderLoad(t *testing.T) {
	srv := redistest.Start(t)
	servers := instancesOn(t, 2, srv.URL(0)+"?"+slowMachineTimeouts)
	load := startLoad(t, servers, servers[0].NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 1 << 30, PerDay: 1 << 30}))

	dayKey := servers[0].NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 1000, PerDay: 100})
	for i := range 10 {
		servers[i%2].Do(t, http.MethodGet, "/v1/pets", dayKey, nil)
	}

	srv.Stop()
	load.waitForLoad(t, load.sentSoFar())
	expectPerInstance(t, servers)
	srv.Restart(t)
	waitUntilCountingIn(t, servers, srv.Addr)
	expectShared(t, servers)

	r := servers[1].Do(t, http.MethodGet, "/v1/pets", dayKey, nil)
	if got := r.Header.Get("RateLimit"); !strings.Contains(got, `"day";r=89;`) {
		t.Fatalf("RateLimit %q after Redis restarted empty: want the day window to go on from 10 used (r=89)", got)
	}
	load.waitForLoad(t, load.sentSoFar())
	load.check(t)
}

// Staff lifting a ban lift it on every instance, also on one that never
// answered the ban: the next request passes wherever it lands.
func TestRedisBanLiftedOnEveryInstance(t *testing.T) {
	servers := instancesOn(t, 2, redisURL(t))
	// Two a minute: two pass, the next limits.MinBanAfter are refused, the
	// last of them bans, and the next is refused for the ban.
	key := servers[0].NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 2, PerDay: 1000})
	for range 2 + limits.MinBanAfter {
		servers[0].Do(t, http.MethodGet, "/v1/pets", key, nil)
	}
	retryAfter(t, servers[0].Do(t, http.MethodGet, "/v1/pets", key, nil), "api_key_banned")

	r := servers[0].Do(t, http.MethodPost, "/api/petstore/keys/"+servers[0].KeyRecord(t, key).Id+"/lift-ban", "",
		nil, "Authorization", servers[0].StaffToken(t))
	if r.StatusCode != http.StatusOK && r.StatusCode != http.StatusNoContent {
		t.Fatalf("lift the ban on the staff page: %d %s", r.StatusCode, r.Body)
	}
	// The minute window starts again: both of its requests pass.
	for i, s := range []*apptest.Server{servers[1], servers[0]} {
		if r := s.Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != http.StatusOK {
			t.Fatalf("request %d after the ban was lifted: %d %s", i, r.StatusCode, r.Body)
		}
	}
}
