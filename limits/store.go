package limits

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/store/memory"
	sredis "github.com/ulule/limiter/v3/drivers/store/redis"
)

// Windows of the same key must not share a counter (ulule/limiter keys its
// counters by store prefix and key only, not by rate), so each window has its
// own store prefix.
const (
	storeMinute    = "minute"
	storeDay       = "day"
	storeRejected  = "rejected"
	storeAnonymous = "anonymous"
)

var storeNames = []string{storeMinute, storeDay, storeRejected, storeAnonymous}

func init() {
	// go-redis logs each failed dial to stderr on its own; failures reach the
	// app's log through redisHealth instead, once per change of state.
	redis.SetLogger(silentRedisLogger{})
}

type silentRedisLogger struct{}

func (silentRedisLogger) Printf(context.Context, string, ...any) {}

// redisTimeout bounds every Redis call, so that a dead Redis slows requests
// by at most this much before they fall back to local counters.
const redisTimeout = 250 * time.Millisecond

// newStores returns one store per window: in memory, or in Redis with a
// fallback to memory while Redis fails. Redis must answer now: a server that
// cannot share its counters refuses to start rather than count alone.
func newStores(cfg Config, logger *slog.Logger) (map[string]limiter.Store, func() error, error) {
	stores := map[string]limiter.Store{}
	local := func(name string) limiter.Store {
		return memory.NewStoreWithOptions(limiter.StoreOptions{Prefix: cfg.Prefix + ":" + name, CleanUpInterval: time.Minute})
	}
	if cfg.RedisURL == "" {
		for _, name := range storeNames {
			stores[name] = local(name)
		}
		return stores, func() error { return nil }, nil
	}

	opts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, nil, fmt.Errorf("--ratelimit-redis: %w", err)
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = redisTimeout, redisTimeout, redisTimeout
	opts.MaxRetries = 0 // the fallback is the retry
	client := redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		client.Close()
		return nil, nil, fmt.Errorf("rate-limit Redis at %s is unreachable: %w", opts.Addr, err)
	}
	health := &redisHealth{logger: logger, addr: opts.Addr}
	for _, name := range storeNames {
		shared, err := sredis.NewStoreWithOptions(client, limiter.StoreOptions{Prefix: cfg.Prefix + ":" + name})
		if err != nil {
			client.Close()
			return nil, nil, fmt.Errorf("rate-limit Redis at %s: %w", opts.Addr, err)
		}
		stores[name] = &failoverStore{shared: shared, local: local(name), health: health}
	}
	return stores, client.Close, nil
}

// redisHealth remembers a Redis failure for a short while, so that requests
// go straight to local counters instead of each waiting for a timeout, and
// logs each change of state once.
type redisHealth struct {
	logger *slog.Logger
	addr   string

	mu        sync.Mutex
	downUntil time.Time
	down      bool
}

const redisRetryEvery = 5 * time.Second

func (h *redisHealth) usable() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return time.Now().After(h.downUntil)
}

func (h *redisHealth) report(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.downUntil = time.Now().Add(redisRetryEvery)
		if !h.down {
			h.logger.Error("Rate-limit Redis failed; counting in this instance's memory until it answers again",
				"addr", h.addr, "error", err)
		}
		h.down = true
		return
	}
	if h.down {
		h.logger.Info("Rate-limit Redis answers again; counting in Redis", "addr", h.addr)
	}
	h.down = false
}

// failoverStore counts in Redis and, while Redis fails, in local memory:
// limits keep holding per instance and every response keeps its headers.
type failoverStore struct {
	shared, local limiter.Store
	health        *redisHealth
}

func (s *failoverStore) do(op func(limiter.Store) (limiter.Context, error)) (limiter.Context, error) {
	if s.health.usable() {
		c, err := op(s.shared)
		s.health.report(err)
		if err == nil {
			return c, nil
		}
	}
	return op(s.local)
}

func (s *failoverStore) Get(ctx context.Context, key string, rate limiter.Rate) (limiter.Context, error) {
	return s.do(func(st limiter.Store) (limiter.Context, error) { return st.Get(ctx, key, rate) })
}

func (s *failoverStore) Peek(ctx context.Context, key string, rate limiter.Rate) (limiter.Context, error) {
	return s.do(func(st limiter.Store) (limiter.Context, error) { return st.Peek(ctx, key, rate) })
}

func (s *failoverStore) Reset(ctx context.Context, key string, rate limiter.Rate) (limiter.Context, error) {
	return s.do(func(st limiter.Store) (limiter.Context, error) { return st.Reset(ctx, key, rate) })
}

func (s *failoverStore) Increment(ctx context.Context, key string, count int64, rate limiter.Rate) (limiter.Context, error) {
	return s.do(func(st limiter.Store) (limiter.Context, error) { return st.Increment(ctx, key, count, rate) })
}
