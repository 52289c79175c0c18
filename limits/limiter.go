package limits

import (
	"context"
	"crypto/rand"
	"encoding/base64"
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

	// stripes hold what this instance knows of each key's windows (its whole
	// count without Redis), under 64 locks.
	stripes *[stripes]stripe
	seed    maphash.Seed
	// fromLedger is what the ledger said each key was served today.
	fromLedger ledgerCounts
	// addresses counts requests without a valid key per client network in
	// memory: always without Redis, and while Redis fails.
	addresses limiter.Store

	// shared counts in Redis; nil without Redis.
	shared *redisCounter
	// instance names this process in the Redis windows' counts.
	instance string

	stop chan struct{} // closed by Close: background work ends
	work sync.WaitGroup
}

// New returns a Limiter counting in memory or, with cfg.RedisURL, in Redis,
// keeping bans in ledger. Each key's day window starts from what the
// ledger says it was served today.
func New(cfg Config, ledger Ledger, logger *slog.Logger) (*Limiter, error) {
	cfg = cfg.withDefaults()
	l := &Limiter{
		cfg: cfg, ledger: ledger, logger: logger, stripes: newStripes(), seed: maphash.MakeSeed(),
		addresses: newAddressStore(cfg), instance: newInstanceID(), stop: make(chan struct{}),
	}
	if err := l.readLedger(cfg.Now()); err != nil {
		return nil, err
	}
	if cfg.RedisURL != "" {
		shared, err := newRedisCounter(cfg.RedisURL, cfg.Prefix)
		if err != nil {
			return nil, err
		}
		l.shared = shared
	}
	l.work.Add(1)
	go l.forgetLoop()
	return l, nil
}

// newInstanceID is a name for this process, unique among the instances
// sharing a Redis: 64 random bits.
func newInstanceID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Close stops the background work and releases Redis.
func (l *Limiter) Close() error {
	close(l.stop)
	l.work.Wait()
	if l.shared != nil {
		return l.shared.client.Close()
	}
	return nil
}

// inRedis reports whether to count in Redis now.
func (l *Limiter) inRedis() bool { return l.shared != nil && l.shared.up.Load() }

// TakeKey decides one request of an API key: admitted when neither its
// minute nor its day window is at its limit and it is not banned, and then
// counted in both; refused requests count in no window. A key that keeps
// sending while refused is banned. A valid key is limited by its quota
// alone: its requests are never counted in, or refused for, the window of
// requests without a valid key.
//
// In Redis, all of that is one script: atomic across instances, one round
// trip.
func (l *Limiter) TakeKey(ctx context.Context, key Key) (Decision, error) {
	now := l.cfg.Now()
	if l.inRedis() {
		d, err := l.takeKeyInRedis(ctx, key, now)
		if err == nil {
			return d, nil
		}
		l.redisFailed(err)
	}
	return l.takeKeyLocally(key, now)
}

func (l *Limiter) takeKeyInRedis(ctx context.Context, key Key, now time.Time) (Decision, error) {
	kc, s := l.lockCounts(key.ID, now)
	k := kc.known()
	s.mu.Unlock()
	r, err := l.shared.takeKey(ctx, l.instance, l.cfg, key, k, now)
	if err != nil {
		return Decision{}, err
	}
	s.mu.Lock()
	kc.learn(k, r)
	s.mu.Unlock()

	d := l.keyDecision(key.Quota, now, r.admitted, r.minuteCount, r.minuteEnd, r.dayCount)
	switch {
	case key.BannedUntil.After(now):
		d = d.banned(key.BannedUntil)
	case r.banLeft > 0:
		// A ban another instance decided holds here at once, before its
		// record in the ledger is read.
		d = d.banned(now.Add(time.Duration(r.banLeft) * time.Millisecond))
	}
	if r.banning {
		// This very request banned the key: one instance, once, records it.
		return d, l.saveBan(key.ID, d.BannedUntil)
	}
	return d, nil
}

// TakeAnonymous counts one request without a valid API key against its
// client network's minute window (see Network), unless the window is at its
// limit.
func (l *Limiter) TakeAnonymous(ctx context.Context, ip string) (Decision, error) {
	return l.address(ctx, Network(ip), true)
}

// PeekAnonymous is the client network's minute window without counting a
// request, for the answers that are not counted (CORS preflights).
func (l *Limiter) PeekAnonymous(ctx context.Context, ip string) (Decision, error) {
	return l.address(ctx, Network(ip), false)
}

func (l *Limiter) address(ctx context.Context, network string, take bool) (Decision, error) {
	if l.inRedis() {
		now := time.Now()
		var count int64
		var reset time.Time
		var refused bool
		var err error
		if take {
			count, reset, refused, err = l.shared.takeAddress(ctx, l.cfg, network, now)
		} else {
			count, reset, err = l.shared.peekAddress(ctx, l.cfg, network, now)
		}
		if err == nil {
			return l.addressDecision(now, count, reset, refused), nil
		}
		l.redisFailed(err)
	}
	return l.addressLocally(ctx, network, take)
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
func (l *Limiter) Counting() string {
	switch {
	case l.shared == nil:
		return "memory"
	case l.shared.up.Load():
		return "redis"
	default:
		return "local"
	}
}
