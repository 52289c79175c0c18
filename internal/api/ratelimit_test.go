package api_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"

	"petstore/hooks"
	"petstore/internal/apikeys"
	"petstore/internal/limits"
	"petstore/internal/options"
	"petstore/testkit/apptest"
	"petstore/testkit/redistest"
)

// rateHeaders reads and checks the rate-limit headers every /v1 response
// carries, and returns limit and remaining.
func rateHeaders(t *testing.T, r *apptest.Response) (limit, remaining int64) {
	t.Helper()
	num := func(name string) int64 {
		v, err := strconv.ParseInt(r.Header.Get(name), 10, 64)
		if err != nil {
			t.Fatalf("%s %s (%d): header %s = %q", r.Request.Method, r.Request.URL.Path, r.StatusCode, name, r.Header.Get(name))
		}
		return v
	}
	limit, remaining = num("X-RateLimit-Limit"), num("X-RateLimit-Remaining")
	reset := num("X-RateLimit-Reset")
	now := time.Now().Unix()
	if remaining < 0 || remaining > limit || reset < now || reset > now+86400+1 {
		t.Fatalf("inconsistent headers: limit %d remaining %d reset %d (now %d)", limit, remaining, reset, now)
	}
	if r.Header.Get("RateLimit-Policy") == "" || r.Header.Get("RateLimit") == "" {
		t.Fatalf("RateLimit-Policy %q, RateLimit %q: want both", r.Header.Get("RateLimit-Policy"), r.Header.Get("RateLimit"))
	}
	return limit, remaining
}

// retryAfter checks a 429 and returns its Retry-After in seconds.
func retryAfter(t *testing.T, r *apptest.Response, code string) int64 {
	t.Helper()
	if e := r.Error(t, http.StatusTooManyRequests); e.Code != code {
		t.Fatalf("429 code %q, want %q", e.Code, code)
	}
	if _, remaining := rateHeaders(t, r); remaining != 0 {
		t.Fatalf("429 with X-RateLimit-Remaining %d", remaining)
	}
	s, err := strconv.ParseInt(r.Header.Get("Retry-After"), 10, 64)
	if err != nil || s < 1 {
		t.Fatalf("Retry-After %q is not a positive whole number of seconds", r.Header.Get("Retry-After"))
	}
	return s
}

func TestRateLimitHeadersOnEveryStatus(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "free"})
	p := s.CreatePet(t, key, map[string]any{"name": "Rex", "categoryId": 1})

	// One key: each request, whatever its status, takes one from the minute window.
	keyed := []struct {
		method, path string
		body         any
		status       int
	}{
		{http.MethodGet, "/v1/pets", nil, 200},
		{http.MethodPost, "/v1/pets", map[string]any{"name": "Tom", "categoryId": 2}, 201},
		{http.MethodPost, "/v1/pets", map[string]any{"name": ""}, 400},
		{http.MethodGet, fmt.Sprintf("/v1/pets/%d", p.ID), nil, 200},
		{http.MethodGet, "/v1/pets/123456789012345", nil, 404},
		{http.MethodDelete, "/v1/pets", nil, 405},
		{http.MethodGet, "/v1/nowhere", nil, 404},
	}
	want := int64(58) // createPet above took one
	for _, c := range keyed {
		r := s.Do(t, c.method, c.path, key, c.body)
		if r.StatusCode != c.status {
			t.Fatalf("%s %s: %d, want %d: %s", c.method, c.path, r.StatusCode, c.status, r.Body)
		}
		limit, remaining := rateHeaders(t, r)
		if limit != 60 || remaining != want {
			t.Fatalf("%s %s: limit %d remaining %d, want 60 and %d", c.method, c.path, limit, remaining, want)
		}
		if got := r.Header.Get("RateLimit-Policy"); got != `"minute";q=60;w=60, "day";q=1000;w=86400` {
			t.Fatalf("RateLimit-Policy %q", got)
		}
		if got := r.Header.Get("RateLimit"); !strings.HasPrefix(got, fmt.Sprintf(`"minute";r=%d;t=`, want)) ||
			!strings.Contains(got, fmt.Sprintf(`"day";r=%d;t=`, 1000-(60-want))) {
			t.Fatalf("RateLimit %q does not match remaining %d", got, want)
		}
		want--
	}

	// Without a valid key: the client IP's window, 60 a minute.
	wantIP := int64(59)
	for _, k := range []string{"", "pet_" + strings.Repeat("A", 43), "garbage"} {
		r := s.Do(t, http.MethodGet, "/v1/pets", k, nil)
		r.Error(t, http.StatusUnauthorized)
		if limit, remaining := rateHeaders(t, r); limit != 60 || remaining != wantIP {
			t.Fatalf("anonymous: limit %d remaining %d, want 60 and %d", limit, remaining, wantIP)
		}
		if got := r.Header.Get("RateLimit-Policy"); got != `"minute";q=60;w=60` {
			t.Fatalf("anonymous RateLimit-Policy %q", got)
		}
		wantIP--
	}
}

func TestMinuteLimitThen429(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "free"})
	for i := 1; i <= 60; i++ {
		r := s.Do(t, http.MethodGet, "/v1/pets", key, nil)
		if _, remaining := rateHeaders(t, r); r.StatusCode != 200 || remaining != int64(60-i) {
			t.Fatalf("request %d: %d, remaining %d", i, r.StatusCode, remaining)
		}
	}
	r := s.Do(t, http.MethodGet, "/v1/pets", key, nil)
	if after := retryAfter(t, r, "rate_limit_exceeded"); after > 60 {
		t.Fatalf("Retry-After %d, want 1..60", after)
	}
}

func TestDayWindowBinds(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 1000, PerDay: 5})
	for i := 1; i <= 5; i++ {
		r := s.Do(t, http.MethodGet, "/v1/pets", key, nil)
		limit, remaining := rateHeaders(t, r)
		if r.StatusCode != 200 || limit != 5 || remaining != int64(5-i) {
			t.Fatalf("request %d: %d, limit %d remaining %d; want the day window (5)", i, r.StatusCode, limit, remaining)
		}
	}
	r := s.Do(t, http.MethodGet, "/v1/pets", key, nil)
	if after := retryAfter(t, r, "rate_limit_exceeded"); after <= 60 || after > 86400 {
		t.Fatalf("Retry-After %d, want the day window's reset", after)
	}
}

func TestPlanEditAppliesToNextRequest(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "pro"})
	if limit, _ := rateHeaders(t, s.Do(t, http.MethodGet, "/v1/pets", key, nil)); limit != 300 {
		t.Fatalf("pro limit %d, want 300", limit)
	}
	plan, err := s.App.FindFirstRecordByData("plans", "name", "pro")
	if err != nil {
		t.Fatal(err)
	}
	plan.Set("per_minute", 2)
	if err := s.App.Save(plan); err != nil {
		t.Fatal(err)
	}
	r := s.Do(t, http.MethodGet, "/v1/pets", key, nil)
	if limit, remaining := rateHeaders(t, r); limit != 2 || remaining != 0 || r.StatusCode != 200 {
		t.Fatalf("after the edit: %d, limit %d remaining %d; want 200, 2, 0", r.StatusCode, limit, remaining)
	}
	retryAfter(t, s.Do(t, http.MethodGet, "/v1/pets", key, nil), "rate_limit_exceeded")
}

// A key that keeps sending while limited is banned; staff lift the ban on the
// staff page (its JSON route) and the next request passes.
func TestBanReachedReportedAndLifted(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 3})
	for range 3 {
		if r := s.Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != 200 {
			t.Fatalf("within quota: %d", r.StatusCode)
		}
	}
	// The ban threshold defaults to the per-minute quota, 3, and is never
	// under limits.MinBanAfter rejections.
	for range limits.MinBanAfter - 1 {
		retryAfter(t, s.Do(t, http.MethodGet, "/v1/pets", key, nil), "rate_limit_exceeded")
	}
	banned := s.Do(t, http.MethodGet, "/v1/pets", key, nil)
	if after := retryAfter(t, banned, "api_key_banned"); after < 14*60 || after > 15*60 {
		t.Fatalf("ban Retry-After %d, want about 15 minutes", after)
	}
	retryAfter(t, s.Do(t, http.MethodGet, "/v1/pets", key, nil), "api_key_banned")

	// Staff see it on the key.
	record := s.KeyRecord(t, key)
	until := record.BannedUntil()
	if time.Until(until) < 14*time.Minute || record.State(time.Now()) != apikeys.StateBanned {
		t.Fatalf("banned_until %v, state %s", until, record.State(time.Now()))
	}

	// ... and lift it.
	token := s.StaffToken(t)
	r := s.Do(t, http.MethodPost, "/api/petstore/keys/"+record.Id+"/lift-ban", "", nil, "Authorization", token)
	if r.StatusCode != 200 {
		t.Fatalf("lift ban: %d %s", r.StatusCode, r.Body)
	}
	if r := s.Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != 200 {
		t.Fatalf("after lifting the ban: %d %s", r.StatusCode, r.Body)
	}
}

// countConcurrent sends n requests at once and counts statuses. The
// responses are checked here, after the senders are done: rateHeaders fails
// the test with t.Fatalf, which only the test's own goroutine may call.
func countConcurrent(t *testing.T, n int, send func() *apptest.Response) map[int]int {
	t.Helper()
	statuses := map[int]int{}
	for _, r := range sendAtOnce(n, func(int) *apptest.Response { return send() }) {
		rateHeaders(t, r)
		statuses[r.StatusCode]++
	}
	return statuses
}

// sendAtOnce makes n requests released together and returns their
// responses, in the order of i.
func sendAtOnce(n int, send func(i int) *apptest.Response) []*apptest.Response {
	var wg sync.WaitGroup
	responses := make([]*apptest.Response, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			responses[i] = send(i)
		}()
	}
	close(start)
	wg.Wait()
	return responses
}

func TestExactUnderConcurrency(t *testing.T) {
	apptest.Slow(t)
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 50, PerDay: 1000})
	statuses := countConcurrent(t, 200, func() *apptest.Response { return s.Do(t, http.MethodGet, "/v1/pets", key, nil) })
	if statuses[200] != 50 || statuses[429] != 150 {
		t.Fatalf("statuses %v, want exactly 50×200 and 150×429", statuses)
	}
}

func TestDayCountsAndBansSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	s := apptest.Start(t, dir)
	key := s.NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 1000, PerDay: 100})
	banned := s.NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 1})
	for range 7 {
		s.Do(t, http.MethodGet, "/v1/pets", key, nil)
	}
	for range 1 + limits.MinBanAfter { // 1 passes, then the rejections ban it
		s.Do(t, http.MethodGet, "/v1/pets", banned, nil)
	}
	retryAfter(t, s.Do(t, http.MethodGet, "/v1/pets", banned, nil), "api_key_banned")
	s.Stop(t)

	s = apptest.Start(t, dir)
	r := s.Do(t, http.MethodGet, "/v1/pets", key, nil)
	if limit, remaining := rateHeaders(t, r); limit != 100 || remaining != 92 {
		t.Fatalf("after restart: limit %d remaining %d, want 100 and 92", limit, remaining)
	}
	retryAfter(t, s.Do(t, http.MethodGet, "/v1/pets", banned, nil), "api_key_banned")
}

// redisURL is a private Redis for one test: a redis-server the test starts
// on a free loopback port (testkit/redistest). Its calls may take up to 2 s:
// a slow, shared machine must not look like a failing Redis.
func redisURL(t *testing.T) string {
	t.Helper()
	return redistest.Start(t).URL(0) + "?" + slowMachineTimeouts
}

const slowMachineTimeouts = "dial_timeout=2s&read_timeout=2s&write_timeout=2s&pool_timeout=5s"

func redisLimits(t *testing.T) limits.Config {
	return limits.Config{Redis: apptest.Redis(t, redisURL(t)), Prefix: fmt.Sprintf("petstore-test-%d", time.Now().UnixNano())}
}

// twoInstancesOnOneRedis serves one data directory from two apps counting in
// one Redis, as two processes behind a load balancer would.
func twoInstancesOnOneRedis(t *testing.T) (a, b *apptest.Server) {
	cfg := redisLimits(t)
	dir := t.TempDir()
	return apptest.StartWith(t, apptest.Config{Dir: dir, Limits: cfg}), apptest.StartWith(t, apptest.Config{Dir: dir, Limits: cfg})
}

func TestRedisTwoInstancesShareAQuota(t *testing.T) {
	a, b := twoInstancesOnOneRedis(t)
	key := a.NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 10, PerDay: 1000})

	for i := 1; i <= 10; i++ {
		s := a
		if i%2 == 0 {
			s = b
		}
		r := s.Do(t, http.MethodGet, "/v1/pets", key, nil)
		if _, remaining := rateHeaders(t, r); r.StatusCode != 200 || remaining != int64(10-i) {
			t.Fatalf("request %d: %d remaining %d, want 200 and %d", i, r.StatusCode, remaining, 10-i)
		}
	}
	retryAfter(t, a.Do(t, http.MethodGet, "/v1/pets", key, nil), "rate_limit_exceeded")
	retryAfter(t, b.Do(t, http.MethodGet, "/v1/pets", key, nil), "rate_limit_exceeded")
}

func TestRedisExactUnderConcurrency(t *testing.T) {
	a, b := twoInstancesOnOneRedis(t)
	key := a.NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 1000, PerDay: 50})
	var i int64
	var mu sync.Mutex
	statuses := countConcurrent(t, 200, func() *apptest.Response {
		mu.Lock()
		s := []*apptest.Server{a, b}[i%2]
		i++
		mu.Unlock()
		return s.Do(t, http.MethodGet, "/v1/pets", key, nil)
	})
	if statuses[200] != 50 || statuses[429] != 150 {
		t.Fatalf("statuses %v, want exactly 50×200 and 150×429 across two instances", statuses)
	}
}

// When Redis dies under a running server, requests keep their limits and
// headers, decided in the instance's memory from what Redis last counted
// (documented: fail over to local counting, logged).
func TestRedisFailureFallsBackToLocalCounting(t *testing.T) {
	redis := redistest.Start(t)
	s := apptest.StartWith(t, apptest.Config{Limits: limits.Config{Redis: apptest.Redis(t, redis.URL(0))}})
	key := s.NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 5})
	if r := s.Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != 200 {
		t.Fatalf("with Redis: %d", r.StatusCode)
	}
	redis.Stop()
	for i := range 4 {
		r := s.Do(t, http.MethodGet, "/v1/pets", key, nil)
		if _, remaining := rateHeaders(t, r); r.StatusCode != 200 || remaining != int64(3-i) {
			t.Fatalf("without Redis, request %d: %d remaining %d, want 200 and %d", i, r.StatusCode, remaining, 3-i)
		}
	}
	retryAfter(t, s.Do(t, http.MethodGet, "/v1/pets", key, nil), "rate_limit_exceeded")
}

func TestUnreachableRedisStopsServeFromStarting(t *testing.T) {
	redis := redistest.Start(t)
	redis.Stop()
	app := core.NewBaseApp(core.BaseAppConfig{DataDir: t.TempDir()})
	if err := app.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	service := hooks.Register(app, options.Options{Limits: limits.Config{Redis: apptest.Redis(t, redis.URL(0))}})
	err := apis.Serve(app, apis.ServeConfig{HttpAddr: "127.0.0.1:0"})
	if err == nil || service.Err() == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("serve error %v, service error %v; want Redis unreachable", err, service.Err())
	}
}
