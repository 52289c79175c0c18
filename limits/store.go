package limits

import (
	"context"
	"time"

	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/store/memory"
)

// Counting in this process's memory, on ulule/limiter's memory store: the
// counters of an instance without Redis, and of an instance with Redis while
// Redis fails.

// Windows of the same key must not share a counter (ulule/limiter keys its
// counters by store prefix and key only, not by rate), so each window has its
// own store prefix. The Redis keys use the same names.
const (
	storeMinute    = "minute"
	storeDay       = "day"
	storeRejected  = "rejected"
	storeAnonymous = "anonymous"
)

var storeNames = []string{storeMinute, storeDay, storeRejected, storeAnonymous}

// newMemoryStores returns one in-memory store per window.
func newMemoryStores(cfg Config) map[string]limiter.Store {
	stores := map[string]limiter.Store{}
	for _, name := range storeNames {
		stores[name] = memory.NewStoreWithOptions(limiter.StoreOptions{Prefix: cfg.Prefix + ":" + name, CleanUpInterval: time.Minute})
	}
	return stores
}

// storeWindow is a window as an ulule/limiter store reports it.
func storeWindow(name string, period time.Duration, c limiter.Context, now time.Time) Window {
	// Stores report the reset in whole seconds, rounded down: a second more
	// keeps Retry-After from ever being early, and no window ends later than
	// a period from now.
	reset := time.Unix(c.Reset+1, 0)
	if limit := now.Add(period); reset.After(limit) {
		reset = limit
	}
	return Window{Name: name, Period: period, Limit: c.Limit, Remaining: c.Remaining, Reached: c.Reached, Reset: reset}
}

func (l *Limiter) minuteRate(limit int64) limiter.Rate {
	return limiter.Rate{Period: l.cfg.MinuteWindow, Limit: limit}
}

func (l *Limiter) dayRate(limit int64) limiter.Rate {
	return limiter.Rate{Period: l.cfg.DayWindow, Limit: limit}
}

// takeKeyLocally is TakeKey in memory.
func (l *Limiter) takeKeyLocally(ctx context.Context, key Key, ip string, now time.Time) (Decision, error) {
	anonymous, err := l.local[storeAnonymous].Peek(ctx, ip, l.minuteRate(l.cfg.AnonymousPerMinute))
	if err != nil {
		return Decision{}, err
	}
	if anonymous.Reached {
		return Decision{Windows: []Window{storeWindow("minute", l.cfg.MinuteWindow, anonymous, now)}}, nil
	}

	q := key.Quota
	// A key's windows are counted under one lock, so that concurrent
	// requests see the same order in both windows and exactly the remaining
	// number of them pass.
	m := l.lock(key.ID)
	defer m.Unlock()
	if l.newLift(key, now) {
		for _, name := range []string{storeMinute, storeRejected} {
			if _, err := l.local[name].Reset(ctx, key.ID, l.minuteRate(1)); err != nil {
				return Decision{}, err
			}
		}
	}

	minute, err := l.local[storeMinute].Get(ctx, key.ID, l.minuteRate(q.PerMinute))
	if err != nil {
		return Decision{}, err
	}
	day, err := l.local[storeDay].Get(ctx, key.ID, l.dayRate(q.PerDay))
	if err != nil {
		return Decision{}, err
	}
	d := Decision{Windows: []Window{
		storeWindow("minute", l.cfg.MinuteWindow, minute, now),
		storeWindow("day", l.cfg.DayWindow, day, now),
	}}

	if key.BannedUntil.After(now) {
		d.BannedUntil = key.BannedUntil
		return d, nil
	}
	if !d.Exceeded() || q.BanFor <= 0 {
		return d, nil
	}
	rejected, err := l.local[storeRejected].Get(ctx, key.ID, l.minuteRate(q.banAfter()))
	if err != nil {
		return Decision{}, err
	}
	if rejected.Remaining == 0 {
		d.BannedUntil = now.Add(q.BanFor)
		// Saved under the key's lock: the next request reads the ban.
		if err := l.saveBan(key.ID, d.BannedUntil); err != nil {
			return Decision{}, err
		}
		return d, nil
	}
	return d, nil
}

// addressLocally is TakeAnonymous (with the store's Get) or PeekAnonymous
// (with its Peek) in memory.
func (l *Limiter) addressLocally(ctx context.Context, ip string, now time.Time,
	read func(context.Context, string, limiter.Rate) (limiter.Context, error)) (Decision, error) {
	c, err := read(ctx, ip, l.minuteRate(l.cfg.AnonymousPerMinute))
	if err != nil {
		return Decision{}, err
	}
	return Decision{Windows: []Window{storeWindow("minute", l.cfg.MinuteWindow, c, now)}}, nil
}

// newLift reports, once per lift, whether key's ban was lifted since the
// local counts last forgot its rejections. A lift older than a minute window
// needs nothing: the windows it would reset have ended. The ledger's
// BanLifted only grows, so a request that read the key before the lift
// cannot undo one applied after it.
func (l *Limiter) newLift(key Key, now time.Time) bool {
	if key.BanLifted.IsZero() || now.Sub(key.BanLifted) >= l.cfg.MinuteWindow {
		return false
	}
	if applied, ok := l.lifts.Load(key.ID); ok && !key.BanLifted.After(applied.(time.Time)) {
		return false
	}
	l.lifts.Store(key.ID, key.BanLifted)
	return true
}
