// Package limits enforces /v1's rate limits: per-key quotas from plans in a
// minute window and a UTC-day window, each key's own or, for a plan that
// counts per customer, its customer's, shared by the customer's keys; a
// per-network limit for callers without a valid key, temporary bans, and
// the headers that report them. Counters live in this process's memory, or
// in Redis, shared by several instances, where one Lua script decides each
// request. While Redis fails, each instance counts on in its memory from
// what it knew, and adds its counts back once Redis answers again.
package limits

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Config is the limiter's configuration; zero fields take the defaults.
type Config struct {
	// Redis, when set, keeps counters in Redis so that several instances
	// share one quota (ParseRedis); nil: in this process's memory.
	Redis *Redis
	// Prefix namespaces the counters, e.g. to let staging and production
	// share one Redis.
	Prefix string
	// AnonymousPerMinute limits requests without a valid API key, per client
	// network (see Network).
	AnonymousPerMinute int64
	// GuestPerMinute limits requests outside /v1 without PocketBase auth,
	// per client network (see Network).
	GuestPerMinute int64
	// MinuteWindow is the length of the keys' and networks' short window.
	// The long window is the UTC calendar day.
	MinuteWindow time.Duration
	// Now is the clock of API keys' windows; time.Now when nil. Only tests
	// set it, to cross a UTC midnight.
	Now func() time.Time
}

// Defaults.
const (
	DefaultPrefix             = "petstore"
	DefaultAnonymousPerMinute = 60
	// DefaultGuestPerMinute admits a few dozen page loads a minute from one
	// network (a page and its files are about ten requests), and a load
	// balancer's health checks, with room to spare.
	DefaultGuestPerMinute = 600
)

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.AnonymousPerMinute <= 0 {
		c.AnonymousPerMinute = DefaultAnonymousPerMinute
	}
	if c.GuestPerMinute <= 0 {
		c.GuestPerMinute = DefaultGuestPerMinute
	}
	if c.MinuteWindow <= 0 {
		c.MinuteWindow = time.Minute
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Check tells whether New can use c, without dialling Redis: counts are
// not negative, and a Redis Cluster's prefix has no braces. It names the
// flag of the first value refused.
func (c Config) Check() error {
	if c.AnonymousPerMinute < 0 {
		return fmt.Errorf("--ratelimit-anonymous %d: a number of requests, or 0 for the default", c.AnonymousPerMinute)
	}
	if c.GuestPerMinute < 0 {
		return fmt.Errorf("--ratelimit-guest %d: a number of requests, or 0 for the default", c.GuestPerMinute)
	}
	if c.Redis != nil && c.Redis.cluster && strings.ContainsAny(c.Prefix, "{}") {
		return fmt.Errorf("--ratelimit-prefix %q: a Redis Cluster's prefix has no braces (they would choose every key's hash slot)", c.Prefix)
	}
	return nil
}

// Store names where c counts, without the Redis URL's passwords.
func (c Config) Store() string {
	if c.Redis == nil {
		return "memory"
	}
	return c.Redis.String()
}

// redacted is u without its passwords: the user part's, and the query's
// (Sentinel's password= and sentinel_password=).
func redacted(u *url.URL) string {
	r := *u
	q := r.Query()
	for name := range q {
		if strings.Contains(strings.ToLower(name), "password") {
			q.Set(name, "xxxxx")
		}
	}
	r.RawQuery = q.Encode()
	return r.Redacted()
}
