package limits

import (
	"context"
	"log/slog"
	"time"

	"petstore/internal/clientnet"
	"petstore/internal/tracing"
)

// Limiter decides, request by request, whether a caller is within its
// limits: a small core over a store (store.go) that keeps the counts.
type Limiter struct {
	cfg    Config
	ledger Ledger
	logger *slog.Logger
	store  store
}

// New returns a Limiter counting in memory or, with cfg.Redis, in Redis
// (one server, Sentinel, or a Redis Cluster),
// keeping bans in ledger. Each key's day window starts from what the
// ledger says it was served today.
func New(cfg Config, ledger Ledger, logger *slog.Logger) (*Limiter, error) {
	cfg = cfg.withDefaults()
	var s store
	var err error
	if cfg.Redis != nil {
		s, err = newRedisStore(cfg, ledger, logger)
	} else {
		s, err = newMemoryStore(cfg, ledger, logger, false)
	}
	if err != nil {
		return nil, err
	}
	return &Limiter{cfg: cfg, ledger: ledger, logger: logger, store: s}, nil
}

// Close stops the background work and releases Redis.
func (l *Limiter) Close() error { return l.store.close() }

// TakeKey decides one request of an API key: admitted when neither its
// minute nor its day window is at its limit and it is not banned, and then
// counted in both; refused requests count in no window. A key that keeps
// sending while refused is banned. The windows, their rejections and their
// ban are the key's own, or its customer's (Key.Customer), shared by every
// key that counts in them; a ban is saved on the key whose request
// reached it. A valid key is limited by its quota
// alone: its requests are never counted in, or refused for, the window of
// requests without a valid key.
//
// In Redis, all of that is one script: atomic across instances, one round
// trip.
func (l *Limiter) TakeKey(ctx context.Context, key Key) (_ Decision, err error) {
	ctx, span := tracing.Start(ctx, "ratelimit.take")
	defer tracing.End(span, &err)
	if span.IsRecording() {
		span.SetAttributes(tracing.Store(l.store.counting()))
	}
	now := l.cfg.Now()
	c, err := l.store.takeKey(ctx, key, now)
	if err != nil {
		return Decision{}, err
	}
	d := l.keyDecision(key.Quota, now, c.admitted, c.minuteCount, c.minuteEnd, c.dayCount)
	switch {
	case key.BannedUntil.After(now):
		d = d.banned(key.BannedUntil)
	case c.banLeft > 0:
		// A ban the store decided holds at once, before its record in the
		// ledger is read.
		d = d.banned(now.Add(time.Duration(c.banLeft) * time.Millisecond))
	}
	if c.banning {
		// This very request banned the key: one instance, once, records it.
		return d, l.saveBan(key.ID, d.BannedUntil)
	}
	return d, nil
}

// keyDecision is the decision on a request of a key with quota q, admitted
// or not, after which its minute window (ending at minuteEnd, ms; 0: none)
// and its day window hold minute and day requests.
func (l *Limiter) keyDecision(q Quota, now time.Time, admitted bool, minute, minuteEnd, day int64) Decision {
	reset := now.Add(l.cfg.MinuteWindow) // a window would start with the next request
	if minuteEnd != 0 {
		reset = time.UnixMilli(minuteEnd)
	}
	return Decision{At: now, Windows: []Window{
		newWindow("minute", l.cfg.MinuteWindow, q.PerMinute, minute, reset, !admitted),
		newWindow("day", secondsPerDay*time.Second, q.PerDay, day, dayEnd(dayOf(now)), !admitted),
	}}
}

// TakeAnonymous counts one /v1 request without a valid API key against its
// client network's minute window (see Network), unless the window is at its
// limit.
func (l *Limiter) TakeAnonymous(ctx context.Context, ip string) (Decision, error) {
	return l.address(ctx, l.anonymous(), clientnet.Of(ip), true)
}

// PeekAnonymous is the client network's minute window without counting a
// request, for the answers that are not counted (CORS preflights).
func (l *Limiter) PeekAnonymous(ctx context.Context, ip string) (Decision, error) {
	return l.address(ctx, l.anonymous(), clientnet.Of(ip), false)
}

// TakeGuest counts one request outside /v1 without PocketBase auth (a page,
// a file of the dashboard, PocketBase's API) against its client network's
// guest window, a window of its own beside /v1's, unless the window is at its
// limit.
func (l *Limiter) TakeGuest(ctx context.Context, ip string) (Decision, error) {
	return l.address(ctx, addressWindow{name: "guest", limit: l.cfg.GuestPerMinute}, clientnet.Of(ip), true)
}

func (l *Limiter) anonymous() addressWindow {
	return addressWindow{name: "anonymous", limit: l.cfg.AnonymousPerMinute}
}

func (l *Limiter) address(ctx context.Context, w addressWindow, network string, take bool) (_ Decision, err error) {
	ctx, span := tracing.Start(ctx, "ratelimit.take")
	defer tracing.End(span, &err)
	if span.IsRecording() {
		span.SetAttributes(tracing.Store(l.store.counting()))
	}
	c, err := l.store.takeAddress(ctx, w, network, take)
	if err != nil {
		return Decision{}, err
	}
	return Decision{At: c.at, Windows: []Window{
		newWindow("minute", l.cfg.MinuteWindow, w.limit, c.count, c.reset, c.refused),
	}}, nil
}

func (l *Limiter) saveBan(keyID string, until time.Time) error {
	if err := l.ledger.SaveBan(keyID, until); err != nil {
		return err
	}
	l.logger.Warn("API key banned for sending while rate limited",
		"keyId", keyID, "until", until.UTC().Format(time.RFC3339))
	return nil
}

// Counting says where the limiter counts now: "memory" without Redis,
// "redis", or "local" while Redis fails (each instance then admits at most a
// quota).
func (l *Limiter) Counting() string { return l.store.counting() }

// RedisLost is how many times counting moved from Redis to this instance's
// memory since the limiter started.
func (l *Limiter) RedisLost() int64 { return l.store.lost() }
