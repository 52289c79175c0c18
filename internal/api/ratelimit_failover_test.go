package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/internal/apikeys"
	"petstore/testkit/apptest"
	"petstore/testkit/redistest"
)

// Two instances on Sentinel, a key of 30 a minute, the primary killed
// (kill -9): see expectGapCountsReachRedis.
func TestRedisSentinelGapCountsReachTheNewPrimary(t *testing.T) {
	hs := redistest.StartSentinel(t)
	servers := instancesOn(t, 2, hs.URL(0)+"&"+slowMachineTimeouts)
	var old string
	expectGapCountsReachRedis(t, servers, func(string) {
		old = hs.MasterAddr(t)
		hs.Primary.Stop()
	}, func() {
		waitUntilCountingIn(t, servers, hs.WaitForFailover(t, old))
	})
}

// The same on a Redis Cluster of 3 masters, each with a replica: the master
// of the key's hash slot killed, its replica promoted.
func TestRedisClusterGapCountsReachTheNewPrimary(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, 1)
	servers := instancesOn(t, 2, cluster.URL()+"&"+slowMachineTimeouts)
	var dead *redistest.Server
	expectGapCountsReachRedis(t, servers, func(keyID string) {
		dead = cluster.MasterFor(t, keyID) // the key's id is its counters' hash tag
		dead.Stop()
	}, func() {
		cluster.WaitForFailover(t, dead)
		waitUntilReadyOnRedis(t, servers)
	})
}

// expectGapCountsReachRedis: two instances, a key of 30 a minute, Redis
// killed (kill) and back (recover). During the gap each instance counts
// alone, one going on from what Redis told it, the other starting a window
// of its own. Once both count in Redis, it has both instances' minute and
// day counts of the gap, and the minute admits nothing more.
func expectGapCountsReachRedis(t *testing.T, servers []*apptest.Server, kill func(keyID string), recover func()) {
	t.Helper()
	key := servers[0].NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 30, PerDay: 1000})
	for range 2 {
		if r := servers[0].Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != http.StatusOK {
			t.Fatalf("before the gap: %d", r.StatusCode)
		}
	}

	kill(servers[0].KeyRecord(t, key).Id)
	// 10 more on the instance that knew of 2, 15 on the other: 27 in all,
	// under the quota on either instance, and in Redis too if one
	// instance's count were lost.
	for i, n := range []int{10, 15} {
		for range n {
			if r := servers[i].Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != http.StatusOK {
				t.Fatalf("instance %d in the gap: %d %s", i, r.StatusCode, r.Body)
			}
		}
	}

	for i, s := range servers {
		if r := s.Do(t, http.MethodGet, "/readyz", "", nil); !strings.Contains(string(r.Body), `"rateLimiter":"local"`) {
			t.Fatalf("instance %d in the gap: /readyz %s, want counting locally", i, r.Body)
		}
	}

	recover()
	// 27 counted: 3 more pass, wherever they land, and no more.
	for i := range 3 {
		if r := servers[i%2].Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != http.StatusOK {
			t.Fatalf("request %d once Redis is back: %d (RateLimit %q)", i, r.StatusCode, r.Header.Get("RateLimit"))
		}
	}
	for i, s := range servers {
		r := s.Do(t, http.MethodGet, "/v1/pets", key, nil)
		retryAfter(t, r, "rate_limit_exceeded")
		if items := rateItems(t, r); items["minute"].r != 0 || items["day"].r != 1000-30 {
			t.Fatalf("instance %d once Redis is back: RateLimit %q, want the minute at r=0 and the day at r=970", i, r.Header.Get("RateLimit"))
		}
	}
}

// waitUntilReadyOnRedis waits until every server's /readyz says it counts
// in Redis.
func waitUntilReadyOnRedis(t *testing.T, servers []*apptest.Server) {
	t.Helper()
	for _, s := range servers {
		deadline := time.Now().Add(time.Minute)
		for {
			r := s.Do(t, http.MethodGet, "/readyz", "", nil)
			if strings.Contains(string(r.Body), `"rateLimiter":"redis"`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s does not count in Redis again: /readyz %d %s", s.URL, r.StatusCode, r.Body)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// Two instances on a Redis Cluster of 3 masters, each with a replica:
// limits exact under concurrent requests, and a master killed (kill -9) and
// failed over under a steady load without a 5xx or a broken connection.
func TestRedisClusterAcrossInstances(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, 1)
	servers := instancesOn(t, 2, cluster.URL()+"&"+slowMachineTimeouts)
	for round := range 3 {
		key := servers[0].NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 20, PerDay: 1000})
		got := outcomes(t, concurrently(t, servers, 60, key))
		if got["200"] != 20 || got["429 rate_limit_exceeded"]+got["429 api_key_banned"] != 40 {
			t.Fatalf("round %d: %v; want exactly 20×200 and 40×429", round, got)
		}
	}

	loadKey := servers[0].NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 1 << 30, PerDay: 1 << 30})
	load := startLoad(t, servers, loadKey)
	load.waitForLoad(t, 0)
	dead := cluster.MasterFor(t, servers[0].KeyRecord(t, loadKey).Id)
	dead.Stop()
	load.waitForLoad(t, load.sentSoFar())
	cluster.WaitForFailover(t, dead)
	waitUntilReadyOnRedis(t, servers)
	load.waitForLoad(t, load.sentSoFar())
	expectShared(t, servers)
	load.check(t)
}
