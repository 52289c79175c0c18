package api_test

import (
	"net/http"
	"testing"

	"petstore/internal/apikeys"
	"petstore/internal/redistest"
)

// Two instances on Sentinel, a key of 30 a minute, the primary killed
// (kill -9): during the gap each instance counts alone, one going on from
// what Redis told it, the other starting a window of its own. Once both
// count in the new primary, it has both instances' minute and day counts
// of the gap, and the minute admits nothing more.
func TestRedisSentinelGapCountsReachTheNewPrimary(t *testing.T) {
	hs := redistest.StartSentinel(t)
	servers := instancesOn(t, 2, hs.URL(0)+"&"+slowMachineTimeouts)
	key := servers[0].NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 30, PerDay: 1000})
	for range 2 {
		if r := servers[0].Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != http.StatusOK {
			t.Fatalf("before the gap: %d", r.StatusCode)
		}
	}

	old := hs.MasterAddr(t)
	hs.Primary.Stop()
	// 10 more on the instance that knew of 2, 15 on the other: 27 in all,
	// under the quota on either instance and under it in Redis too, if one
	// instance's count were lost.
	for i, n := range []int{10, 15} {
		for range n {
			if r := servers[i].Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != http.StatusOK {
				t.Fatalf("instance %d in the gap: %d %s", i, r.StatusCode, r.Body)
			}
		}
	}

	primary := hs.WaitForFailover(t, old)
	waitUntilCountingIn(t, servers, primary)
	// 27 counted: 3 more pass, wherever they land, and no more.
	for i := range 3 {
		if r := servers[i%2].Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != http.StatusOK {
			t.Fatalf("request %d after the failover: %d (RateLimit %q)", i, r.StatusCode, r.Header.Get("RateLimit"))
		}
	}
	for i, s := range servers {
		r := s.Do(t, http.MethodGet, "/v1/pets", key, nil)
		retryAfter(t, r, "rate_limit_exceeded")
		if items := rateItems(t, r); items["minute"].r != 0 || items["day"].r != 1000-30 {
			t.Fatalf("instance %d after the failover: RateLimit %q, want the minute at r=0 and the day at r=970", i, r.Header.Get("RateLimit"))
		}
	}
}
