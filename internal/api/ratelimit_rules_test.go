package api_test

import (
	"bytes"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/internal/apikeys"
	"petstore/internal/commands"
	"petstore/internal/limits"
	"petstore/internal/usage"
	"petstore/testkit/apptest"
)

// inEachStore runs f with the counters in memory and in a Redis of its own.
func inEachStore(t *testing.T, f func(t *testing.T, cfg limits.Config)) {
	t.Helper()
	t.Run("memory", func(t *testing.T) { f(t, limits.Config{}) })
	t.Run("redis", func(t *testing.T) { f(t, redisLimits(t)) })
}

// rateItem is one window's item in the RateLimit field.
type rateItem struct{ r, t int64 }

var rateItemPattern = regexp.MustCompile(`^"(\w+)";r=(\d+);t=(\d+)$`)

// rateItems parses the RateLimit field: each window's requests remaining and
// seconds to its reset.
func rateItems(t *testing.T, r *apptest.Response) map[string]rateItem {
	t.Helper()
	items := map[string]rateItem{}
	for _, item := range strings.Split(r.Header.Get("RateLimit"), ", ") {
		m := rateItemPattern.FindStringSubmatch(item)
		if m == nil {
			t.Fatalf("RateLimit %q: item %q", r.Header.Get("RateLimit"), item)
		}
		remaining, _ := strconv.ParseInt(m[2], 10, 64)
		reset, _ := strconv.ParseInt(m[3], 10, 64)
		items[m[1]] = rateItem{remaining, reset}
	}
	return items
}

func header(t *testing.T, r *apptest.Response, name string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(r.Header.Get(name), 10, 64)
	if err != nil {
		t.Fatalf("%s %q: %v", name, r.Header.Get(name), err)
	}
	return v
}

// secondsToMidnightUTC is the whole seconds from at to the next 00:00 UTC,
// rounded up.
func secondsToMidnightUTC(at time.Time) int64 {
	midnight := at.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	return int64((midnight.Sub(at) + time.Second - 1) / time.Second)
}

// A valid key is limited by its plan and by nothing else: an address that
// its wrong keys have locked out still gets a pro key served, with the pro
// plan's limit, and the key's requests are not counted in the address's
// window. Guessing stays throttled per address.
func TestValidKeyIsLimitedByItsPlanAlone(t *testing.T) {
	inEachStore(t, func(t *testing.T, cfg limits.Config) {
		s := apptest.StartWith(t, apptest.Config{Limits: cfg})
		pro := s.NewKey(t, apikeys.NewKey{Plan: "pro"})
		guess := func() *apptest.Response { return s.Do(t, http.MethodGet, "/v1/pets", apikeys.Generate(), nil) }

		if _, remaining := rateHeaders(t, guess()); remaining != 59 {
			t.Fatalf("first wrong key: %d remaining in the address's window, want 59", remaining)
		}
		if r := s.Do(t, http.MethodGet, "/v1/pets", pro, nil); r.StatusCode != http.StatusOK {
			t.Fatalf("pro key: %d", r.StatusCode)
		}
		if _, remaining := rateHeaders(t, guess()); remaining != 58 {
			t.Fatalf("after a valid key's request: %d remaining in the address's window, want 58 (not counted)", remaining)
		}
		for range 58 {
			apptest.ExpectError(t, guess(), http.StatusUnauthorized, "unauthorized")
		}
		// The address is locked out: guesses get 429, and count for nothing.
		for range 3 {
			if after := retryAfter(t, guess(), "rate_limit_exceeded"); after > 60 {
				t.Fatalf("locked-out address: Retry-After %d, want at most a minute", after)
			}
		}

		r := s.Do(t, http.MethodGet, "/v1/pets", pro, nil)
		if limit, remaining := rateHeaders(t, r); r.StatusCode != http.StatusOK || limit != 300 || remaining != 298 {
			t.Fatalf("pro key from the locked-out address: %d, limit %d remaining %d; want 200, 300, 298", r.StatusCode, limit, remaining)
		}
		if got := r.Header.Get("RateLimit-Policy"); got != `"minute";q=300;w=60, "day";q=10000;w=86400` {
			t.Fatalf("pro key's RateLimit-Policy %q: want its plan's windows alone", got)
		}
		retryAfter(t, guess(), "rate_limit_exceeded")
	})
}

// Refused requests are free: ten 429s, over the minute window and then
// banned, leave the day window where it was, and the usage history and
// `keys list` count them as refused beside the served ones, which are what
// the day window counts.
func TestRefusedRequestsAreFree(t *testing.T) {
	inEachStore(t, func(t *testing.T, cfg limits.Config) {
		dir := t.TempDir()
		s := apptest.StartWith(t, apptest.Config{Dir: dir, Limits: cfg})
		// Five a minute; the free plan bans at limits.MinBanAfter rejections
		// (its quota, 5, is under it).
		key := s.NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 5, PerDay: 1000})
		for i := range 5 {
			r := s.Do(t, http.MethodGet, "/v1/pets", key, nil)
			if day := rateItems(t, r)["day"]; r.StatusCode != http.StatusOK || day.r != int64(999-i) {
				t.Fatalf("request %d: %d, day r=%d; want 200, %d", i, r.StatusCode, day.r, 999-i)
			}
		}
		for i := range 15 {
			r := s.Do(t, http.MethodGet, "/v1/pets", key, nil)
			code := "rate_limit_exceeded"
			if i >= limits.MinBanAfter-1 { // the 10th rejection bans
				code = "api_key_banned"
			}
			retryAfter(t, r, code)
			if items := rateItems(t, r); items["day"].r != 995 || items["minute"].r != 0 {
				t.Fatalf("429 number %d (%s): RateLimit %q; want the day window unchanged at r=995, the minute at r=0",
					i+1, code, r.Header.Get("RateLimit"))
			}
		}

		// The history, saved at shutdown, counts the served requests beside
		// the refused ones, and the day window goes on from the served ones
		// after a restart.
		id := s.KeyRecord(t, key).Id
		s.Stop(t)
		s = apptest.StartWith(t, apptest.Config{Dir: dir, Limits: cfg})
		today, err := usage.Saved(s.App, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if c := today[id]; c.Admitted() != 5 || c.Limited != 15 {
			t.Errorf("usage history today: %+v, want 5 served and 15 refused", c)
		}
		var out bytes.Buffer
		list := commands.NewKeysCommand(s.App)
		list.SetArgs([]string{"list"})
		list.SetOut(&out)
		if err := list.Execute(); err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`(?m)^` + id + `\s.*\s5\s+15\s*$`).MatchString(out.String()) {
			t.Errorf("keys list:\n%s\nwant the key with 5 served and 15 refused today", out.String())
		}
		r := s.Do(t, http.MethodGet, "/v1/pets", key, nil)
		retryAfter(t, r, "api_key_banned")
		if day := rateItems(t, r)["day"]; day.r != 995 {
			t.Errorf("after a restart: day r=%d, want 995 (1000 - 5 served)", day.r)
		}
	})
}

// During a ban every header says the same: nothing remaining, until the ban
// ends, in X-RateLimit-*, in RateLimit and in Retry-After.
func TestBanHeadersAgree(t *testing.T) {
	inEachStore(t, func(t *testing.T, cfg limits.Config) {
		s := apptest.StartWith(t, apptest.Config{Limits: cfg})
		key := s.NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 2, PerDay: 1000})
		for range 2 {
			if r := s.Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != http.StatusOK {
				t.Fatalf("within the quota: %d", r.StatusCode)
			}
		}
		for range limits.MinBanAfter - 1 {
			retryAfter(t, s.Do(t, http.MethodGet, "/v1/pets", key, nil), "rate_limit_exceeded")
		}
		for i := range 3 { // the 10th rejection bans, and the ban holds
			before := time.Now()
			r := s.Do(t, http.MethodGet, "/v1/pets", key, nil)
			after := retryAfter(t, r, "api_key_banned")
			until := s.KeyRecord(t, key).BannedUntil()
			if most := int64((until.Sub(before) + time.Second - 1) / time.Second); after < most-2 || after > most {
				t.Fatalf("banned request %d: Retry-After %d, want the ban's %d seconds", i, after, most)
			}
			if reset := header(t, r, "X-RateLimit-Reset"); reset < until.Unix() || reset > until.Unix()+1 {
				t.Fatalf("banned request %d: X-RateLimit-Reset %d, want the ban's end %d", i, reset, until.Unix())
			}
			if minute := rateItems(t, r)["minute"]; minute.r != 0 || minute.t != after {
				t.Fatalf("banned request %d: RateLimit %q, want \"minute\";r=0;t=%d (Retry-After)", i, r.Header.Get("RateLimit"), after)
			}
			if limit, remaining := rateHeaders(t, r); limit != 2 || remaining != 0 {
				t.Fatalf("banned request %d: X-RateLimit-Limit %d, Remaining %d; want 2 and 0", i, limit, remaining)
			}
		}
	})
}

// The day window is the UTC day: RateLimit's day item resets at the next
// 00:00 UTC, and so does X-RateLimit-Reset when the day window binds.
func TestDayWindowIsTheUTCDay(t *testing.T) {
	inEachStore(t, func(t *testing.T, cfg limits.Config) {
		s := apptest.StartWith(t, apptest.Config{Limits: cfg})
		key := s.NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 1000, PerDay: 5})
		for i := range 6 {
			before := time.Now()
			r := s.Do(t, http.MethodGet, "/v1/pets", key, nil)
			after := time.Now()
			day := rateItems(t, r)["day"]
			if day.t < secondsToMidnightUTC(after) || day.t > secondsToMidnightUTC(before) {
				t.Fatalf("request %d: day t=%d, want the seconds to 00:00 UTC (%d)", i, day.t, secondsToMidnightUTC(after))
			}
			midnight := after.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour).Unix()
			if reset := header(t, r, "X-RateLimit-Reset"); reset != midnight {
				t.Fatalf("request %d: X-RateLimit-Reset %d, want 00:00 UTC (%d): the day window binds", i, reset, midnight)
			}
			if i == 5 {
				if after := retryAfter(t, r, "rate_limit_exceeded"); after != day.t {
					t.Fatalf("over the day quota: Retry-After %d, want the day's t=%d", after, day.t)
				}
			}
		}
	})
}

// settableClock is a clock that tests move.
type settableClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *settableClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *settableClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// At 00:00 UTC a key's day window starts again, and its minute window goes
// on: three requests at 23:59:58 use up a day of three, the next is refused
// for 2 seconds, and at 00:00:01 the key is served again.
func TestDayWindowResetsAtMidnightUTC(t *testing.T) {
	inEachStore(t, func(t *testing.T, cfg limits.Config) {
		clock := &settableClock{now: time.Date(2030, 6, 14, 23, 59, 58, 0, time.UTC)}
		cfg.Now = clock.Now
		s := apptest.StartWith(t, apptest.Config{Limits: cfg})
		key := s.NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 10, PerDay: 3})
		for i := range 3 {
			r := s.Do(t, http.MethodGet, "/v1/pets", key, nil)
			if items := rateItems(t, r); r.StatusCode != http.StatusOK || items["day"] != (rateItem{int64(2 - i), 2}) {
				t.Fatalf("request %d at 23:59:58: %d, RateLimit %q", i, r.StatusCode, r.Header.Get("RateLimit"))
			}
		}
		// (retryAfter would check the reset against the real clock.)
		r := s.Do(t, http.MethodGet, "/v1/pets", key, nil)
		apptest.ExpectError(t, r, http.StatusTooManyRequests, "rate_limit_exceeded")
		if after := header(t, r, "Retry-After"); after != 2 {
			t.Fatalf("over the day at 23:59:58: Retry-After %d, want 2", after)
		}
		if reset, midnight := header(t, r, "X-RateLimit-Reset"), time.Date(2030, 6, 15, 0, 0, 0, 0, time.UTC).Unix(); reset != midnight {
			t.Fatalf("X-RateLimit-Reset %d, want 00:00 UTC (%d)", reset, midnight)
		}

		clock.Set(time.Date(2030, 6, 15, 0, 0, 1, 0, time.UTC))
		r = s.Do(t, http.MethodGet, "/v1/pets", key, nil)
		items := rateItems(t, r)
		if r.StatusCode != http.StatusOK || items["day"] != (rateItem{2, 86399}) || items["minute"].r != 6 {
			t.Fatalf("at 00:00:01: %d, RateLimit %q; want 200, a new day (r=2;t=86399), the same minute (r=6)",
				r.StatusCode, r.Header.Get("RateLimit"))
		}
	})
}

// Requests without a valid key count per client network: with the proxy's
// header trusted, the addresses of one IPv6 /64 share one window, and an
// IPv4-mapped address counts as its IPv4 address.
func TestKeylessNetworks(t *testing.T) {
	inEachStore(t, func(t *testing.T, cfg limits.Config) {
		s := apptest.StartWith(t, apptest.Config{Limits: cfg})
		settings := s.App.Settings()
		settings.TrustedProxy.Headers = []string{"X-Forwarded-For"}
		if err := s.App.Save(settings); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			from      string
			remaining int64
		}{
			{"2001:db8::1", 59},
			{"2001:db8::2", 58},
			{"2001:db8:0:0:ffff:ffff:ffff:ffff", 57},
			{"2001:0DB8:0000:0000:0000:0000:0000:0003", 56},
			{"2001:db8:0:1::1", 59}, // another /64
			{"203.0.113.5", 59},
			{"::ffff:203.0.113.5", 58},
			{"::ffff:cb00:7105", 57}, // the same, in hexadecimal
			{"203.0.113.6", 59},
		} {
			r := s.Do(t, http.MethodGet, "/v1/pets", "", nil, "X-Forwarded-For", c.from)
			apptest.ExpectError(t, r, http.StatusUnauthorized, "unauthorized")
			if _, remaining := rateHeaders(t, r); remaining != c.remaining {
				t.Errorf("from %s: %d remaining, want %d", c.from, remaining, c.remaining)
			}
		}
		// A CORS preflight reports its network's window, uncounted.
		r := s.Do(t, http.MethodOptions, "/v1/pets", "", nil, "X-Forwarded-For", "2001:db8::ab",
			"Origin", "https://shop.example", "Access-Control-Request-Method", "GET")
		if got := r.Header.Get("X-RateLimit-Remaining"); got != "56" {
			t.Errorf("preflight from 2001:db8::ab: X-RateLimit-Remaining %q, want 56", got)
		}
	})
}
