// Package limits enforces /v1's rate limits: per-key quotas from plans in a
// minute and a day window, per-IP limits for callers without a valid key,
// temporary bans, and the headers that report them. Counters live in
// memory (ulule/limiter's store), or in Redis, shared by several instances,
// where one Lua script decides each request.
package limits

import "time"

// Config is the limiter's configuration; zero fields take the defaults.
type Config struct {
	// RedisURL, when set, keeps counters in Redis so that several instances
	// share one quota: redis://HOST:PORT/DB, or a primary found through Redis
	// Sentinel, redis://SENTINEL/DB?master_name=NAME&addr=SENTINEL2&...
	// (go-redis's failover URL).
	RedisURL string
	// Prefix namespaces the counters, e.g. to let staging and production
	// share one Redis.
	Prefix string
	// AnonymousPerMinute limits requests without a valid API key, per client IP.
	AnonymousPerMinute int64
	// MinuteWindow and DayWindow are the lengths of the two windows.
	MinuteWindow, DayWindow time.Duration
	// FlushEvery is how often day counts are written to the api_keys records.
	FlushEvery time.Duration
}

// Defaults.
const (
	DefaultPrefix             = "petstore"
	DefaultAnonymousPerMinute = 60
	DefaultFlushEvery         = 5 * time.Second
)

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.AnonymousPerMinute <= 0 {
		c.AnonymousPerMinute = DefaultAnonymousPerMinute
	}
	if c.MinuteWindow <= 0 {
		c.MinuteWindow = time.Minute
	}
	if c.DayWindow <= 0 {
		c.DayWindow = 24 * time.Hour
	}
	if c.FlushEvery <= 0 {
		c.FlushEvery = DefaultFlushEvery
	}
	return c
}
