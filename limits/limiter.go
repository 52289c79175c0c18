package limits

import (
	"context"
	"hash/maphash"
	"log/slog"
	"sync"
	"time"

	"github.com/ulule/limiter/v3"
)

// Limiter decides, request by request, whether a caller is within its limits.
type Limiter struct {
	cfg    Config
	ledger Ledger
	logger *slog.Logger

	// local counts in this process's memory: always without Redis, and
	// while Redis fails.
	local map[string]limiter.Store
	// shared counts in Redis; nil without Redis.
	shared *redisCounter

	// Local counting takes a key's windows under one lock; so do bans.
	locks [64]sync.Mutex
	seed  maphash.Seed

	// counted holds the ids of keys counted since the last flush.
	counted sync.Map
	// lifts holds, per key, the Key.BanLifted whose lift was applied to the
	// local counts.
	lifts sync.Map

	stop chan struct{} // closed by Close: background work ends
	work sync.WaitGroup
}

// New returns a Limiter counting in memory or, with cfg.RedisURL, in Redis,
// keeping bans and day counts in ledger. Counting starts from the day counts
// saved in ledger (in memory, always; in Redis, for the windows Redis does
// not have).
func New(cfg Config, ledger Ledger, logger *slog.Logger) (*Limiter, error) {
	cfg = cfg.withDefaults()
	l := &Limiter{
		cfg: cfg, ledger: ledger, logger: logger, local: newMemoryStores(cfg), seed: maphash.MakeSeed(),
		stop: make(chan struct{}),
	}
	if cfg.RedisURL == "" {
		if err := l.restoreDayCounts(); err != nil {
			return nil, err
		}
	} else {
		shared, err := newRedisCounter(cfg.RedisURL, cfg.Prefix)
		if err != nil {
			return nil, err
		}
		l.shared = shared
		if err := l.seedRedis(); err != nil {
			shared.client.Close()
			return nil, err
		}
	}
	l.work.Add(1)
	go l.flushLoop()
	return l, nil
}

// Close saves the day counts and releases Redis.
func (l *Limiter) Close() error {
	close(l.stop)
	l.work.Wait()
	flushErr := l.flushDayCounts()
	if l.shared != nil {
		if err := l.shared.client.Close(); err != nil {
			return err
		}
	}
	return flushErr
}

func (l *Limiter) lock(id string) *sync.Mutex {
	m := &l.locks[maphash.String(l.seed, id)%uint64(len(l.locks))]
	m.Lock()
	return m
}

// inRedis reports whether to count in Redis now.
func (l *Limiter) inRedis() bool { return l.shared != nil && l.shared.up.Load() }

// TakeKey counts one request of an API key in both its windows, whatever
// becomes of the request, and bans the key when it keeps sending while
// limited.
//
// A client IP over its limit for requests without a valid key is refused
// first, valid key or not: otherwise a key guesser, refused for its wrong
// guesses, would still be told when a guess is right.
//
// In Redis, all of that is one script: atomic across instances, one round
// trip.
func (l *Limiter) TakeKey(ctx context.Context, key Key, ip string) (Decision, error) {
	now := time.Now()
	l.counted.Store(key.ID, struct{}{})
	var bannedInRedis bool
	d, err := l.count(func() (d Decision, err error) {
		d, bannedInRedis, err = l.shared.takeKey(ctx, l.cfg, key, ip, now)
		return d, err
	}, func() (Decision, error) {
		return l.takeKeyLocally(ctx, key, ip, now)
	})
	if err == nil && bannedInRedis {
		err = l.saveBan(key.ID, d.BannedUntil)
	}
	return d, err
}

// TakeAnonymous counts one request without a valid API key against the
// client IP's minute window.
func (l *Limiter) TakeAnonymous(ctx context.Context, ip string) (Decision, error) {
	now := time.Now()
	return l.count(func() (Decision, error) {
		return l.shared.takeAddress(ctx, l.cfg, ip, now)
	}, func() (Decision, error) {
		return l.addressLocally(ctx, ip, now, l.local[storeAnonymous].Get)
	})
}

func (l *Limiter) saveBan(keyID string, until time.Time) error {
	if err := l.ledger.SaveBan(keyID, until); err != nil {
		return err
	}
	l.logger.Warn("API key banned for sending while rate limited",
		"keyId", keyID, "until", until.UTC().Format(time.RFC3339))
	return nil
}

// PeekAnonymous is the client IP's minute window without counting a request,
// for the answers that are not counted (CORS preflights).
func (l *Limiter) PeekAnonymous(ctx context.Context, ip string) (Decision, error) {
	now := time.Now()
	return l.count(func() (Decision, error) {
		return l.shared.peekAddress(ctx, l.cfg, ip, now)
	}, func() (Decision, error) {
		return l.addressLocally(ctx, ip, now, l.local[storeAnonymous].Peek)
	})
}
