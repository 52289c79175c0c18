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
	stores map[string]limiter.Store
	close  func() error

	// Each key's windows are counted under one lock, so that concurrent
	// requests see the same order in both windows and exactly the remaining
	// number of them pass.
	locks [64]sync.Mutex
	seed  maphash.Seed

	// counted holds the ids of keys counted since the last flush.
	counted sync.Map

	stopFlush chan struct{}
	flushDone chan struct{}
}

// New returns a Limiter counting in memory or, with cfg.RedisURL, in Redis,
// keeping bans and day counts in ledger. In memory, it restores the day
// counts saved before the last stop.
func New(cfg Config, ledger Ledger, logger *slog.Logger) (*Limiter, error) {
	cfg = cfg.withDefaults()
	stores, closeStores, err := newStores(cfg, logger)
	if err != nil {
		return nil, err
	}
	l := &Limiter{
		cfg: cfg, ledger: ledger, logger: logger, stores: stores, close: closeStores, seed: maphash.MakeSeed(),
		stopFlush: make(chan struct{}), flushDone: make(chan struct{}),
	}
	if cfg.RedisURL == "" {
		if err := l.restoreDayCounts(); err != nil {
			closeStores()
			return nil, err
		}
	}
	go l.flushLoop()
	return l, nil
}

// Close saves the day counts and releases Redis.
func (l *Limiter) Close() error {
	close(l.stopFlush)
	<-l.flushDone
	flushErr := l.flushDayCounts()
	if err := l.close(); err != nil {
		return err
	}
	return flushErr
}

func (l *Limiter) lock(id string) *sync.Mutex {
	m := &l.locks[maphash.String(l.seed, id)%uint64(len(l.locks))]
	m.Lock()
	return m
}

func (l *Limiter) minuteRate(limit int64) limiter.Rate {
	return limiter.Rate{Period: l.cfg.MinuteWindow, Limit: limit}
}

func (l *Limiter) dayRate(limit int64) limiter.Rate {
	return limiter.Rate{Period: l.cfg.DayWindow, Limit: limit}
}

// TakeKey counts one request of an API key in both its windows, whatever becomes of the request, and bans the key when it keeps
// sending while limited.
//
// A client IP over its limit for requests without a valid key is refused
// first, valid key or not: otherwise a key guesser, refused for its wrong
// guesses, would still be told when a guess is right.
func (l *Limiter) TakeKey(ctx context.Context, key Key, ip string) (Decision, error) {
	anonymous, err := l.stores[storeAnonymous].Peek(ctx, ip, l.minuteRate(l.cfg.AnonymousPerMinute))
	if err != nil {
		return Decision{}, err
	}
	if anonymous.Reached {
		return Decision{Windows: []Window{newWindow("minute", l.cfg.MinuteWindow, anonymous, time.Now())}}, nil
	}

	q := key.Quota
	now := time.Now()
	l.counted.Store(key.ID, struct{}{})

	m := l.lock(key.ID)
	defer m.Unlock()

	minute, err := l.stores[storeMinute].Get(ctx, key.ID, l.minuteRate(q.PerMinute))
	if err != nil {
		return Decision{}, err
	}
	day, err := l.stores[storeDay].Get(ctx, key.ID, l.dayRate(q.PerDay))
	if err != nil {
		return Decision{}, err
	}
	d := Decision{Windows: []Window{
		newWindow("minute", l.cfg.MinuteWindow, minute, now),
		newWindow("day", l.cfg.DayWindow, day, now),
	}}

	if key.BannedUntil.After(now) {
		d.BannedUntil = key.BannedUntil
		return d, nil
	}
	if !d.Exceeded() || q.BanFor <= 0 {
		return d, nil
	}
	rejected, err := l.stores[storeRejected].Get(ctx, key.ID, l.minuteRate(q.banAfter()))
	if err != nil {
		return Decision{}, err
	}
	if rejected.Remaining == 0 {
		d.BannedUntil = now.Add(q.BanFor)
		if err := l.ledger.SaveBan(key.ID, d.BannedUntil); err != nil {
			return Decision{}, err
		}
		l.logger.Warn("API key banned for sending while rate limited",
			"keyId", key.ID, "until", d.BannedUntil.UTC().Format(time.RFC3339))
	}
	return d, nil
}

// LiftBan is what lifting a ban in the dashboard does besides clearing
// banned_until: it forgets the key's minute window and rejections, so that
// its next request passes (its day window stays).
func (l *Limiter) LiftBan(ctx context.Context, keyID string) error {
	m := l.lock(keyID)
	defer m.Unlock()
	for _, name := range []string{storeMinute, storeRejected} {
		if _, err := l.stores[name].Reset(ctx, keyID, l.minuteRate(1)); err != nil {
			return err
		}
	}
	return nil
}

// TakeAnonymous counts one request without a valid API key against the
// client IP's minute window.
func (l *Limiter) TakeAnonymous(ctx context.Context, ip string) (Decision, error) {
	c, err := l.stores[storeAnonymous].Get(ctx, ip, l.minuteRate(l.cfg.AnonymousPerMinute))
	if err != nil {
		return Decision{}, err
	}
	return Decision{Windows: []Window{newWindow("minute", l.cfg.MinuteWindow, c, time.Now())}}, nil
}

// PeekAnonymous is the client IP's minute window without counting a request,
// for the answers that are not counted (CORS preflights).
func (l *Limiter) PeekAnonymous(ctx context.Context, ip string) (Decision, error) {
	c, err := l.stores[storeAnonymous].Peek(ctx, ip, l.minuteRate(l.cfg.AnonymousPerMinute))
	if err != nil {
		return Decision{}, err
	}
	return Decision{Windows: []Window{newWindow("minute", l.cfg.MinuteWindow, c, time.Now())}}, nil
}
