package limits

import (
	"context"
	"hash/maphash"
	"sync"
	"time"

	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/store/memory"
)

// What this instance knows of each key's windows, in its memory. Without
// Redis, that is the whole count. With Redis, it is what Redis answered
// last, and what this instance admitted since: while Redis fails, each
// instance decides from it alone, and once Redis answers again it gives
// Redis what it admitted meanwhile, and what Redis lost.

// windowCounts is one window of a key as this instance knows it.
type windowCounts struct {
	mine   int64 // admitted by this instance
	others int64 // admitted by the other instances, as last known: never more than they did
}

func (w windowCounts) total() int64 { return w.mine + w.others }

// keyCounts is what this instance knows of one key.
type keyCounts struct {
	minuteEnd int64 // the minute window's end, ms since the epoch; 0: no window
	minute    windowCounts
	day       int64 // the UTC day of dayCounts
	dayCounts windowCounts
	// Rejections towards a ban, counted here while counting in memory, until
	// rejectedEnd (ms since the epoch).
	rejected, rejectedEnd int64
	lift                  int64 // the ban lift (Key.BanLifted, ms) applied here
	unsent                bool  // admitted requests here that Redis does not have yet
}

// stripe is one of the locks that the keys' counts are taken under, with
// the counts of the keys it covers.
type stripe struct {
	mu   sync.Mutex
	keys map[string]*keyCounts
}

const stripes = 64

func newStripes() *[stripes]stripe {
	var s [stripes]stripe
	for i := range s {
		s[i].keys = map[string]*keyCounts{}
	}
	return &s
}

func (l *Limiter) stripe(id string) *stripe {
	return &l.stripes[maphash.String(l.seed, id)%stripes]
}

// lockCounts returns the counts of key id as they stand at now, with its
// stripe locked: the caller unlocks it.
func (l *Limiter) lockCounts(id string, now time.Time) (*keyCounts, *stripe) {
	s := l.stripe(id)
	s.mu.Lock()
	kc := s.keys[id]
	if kc == nil {
		kc = &keyCounts{}
		s.keys[id] = kc
	}
	nowMS, day := now.UnixMilli(), dayOf(now)
	if kc.minuteEnd != 0 && kc.minuteEnd <= nowMS {
		kc.minuteEnd, kc.minute = 0, windowCounts{}
	}
	if kc.day != day {
		kc.day, kc.dayCounts = day, windowCounts{others: l.fromLedger.of(id, day)}
	}
	if kc.rejectedEnd <= nowMS {
		kc.rejected, kc.rejectedEnd = 0, 0
	}
	return kc, s
}

// known is what kc tells Redis.
func (kc *keyCounts) known() known {
	return known{minuteEnd: kc.minuteEnd, minuteMine: kc.minute.mine, minuteOthers: kc.minute.others,
		day: kc.day, dayMine: kc.dayCounts.mine, dayOthers: kc.dayCounts.others}
}

// learn takes in what Redis answered for the day of k: it only ever raises
// what kc knows, as answers may arrive out of order.
func (kc *keyCounts) learn(k known, r redisCounts) {
	switch {
	case r.minuteEnd == kc.minuteEnd && r.minuteEnd != 0:
		kc.minute.mine = max(kc.minute.mine, r.minuteMine)
		kc.minute.others = max(kc.minute.others, r.minuteCount-r.minuteMine)
	case r.minuteEnd > kc.minuteEnd: // a newer window
		kc.minuteEnd = r.minuteEnd
		kc.minute = windowCounts{mine: r.minuteMine, others: r.minuteCount - r.minuteMine}
	}
	if k.day != kc.day {
		return // the day has changed since
	}
	kc.dayCounts.mine = max(kc.dayCounts.mine, r.dayMine)
	kc.dayCounts.others = max(kc.dayCounts.others, r.dayCount-r.dayMine)
	if kc.dayCounts.mine <= r.dayMine && (kc.minuteEnd != r.minuteEnd || kc.minute.mine <= r.minuteMine) {
		kc.unsent = false
	}
}

// takeKeyLocally is TakeKey in this instance's memory.
func (l *Limiter) takeKeyLocally(key Key, now time.Time) (Decision, error) {
	kc, s := l.lockCounts(key.ID, now)
	defer s.mu.Unlock()
	nowMS := now.UnixMilli()
	if lift := unixMilli(key.BanLifted); lift > kc.lift && nowMS-lift < ms(l.cfg.MinuteWindow) {
		// Staff lifted a ban since: the rejections and the minute window
		// before the lift are forgotten, once. A lift older than a minute
		// window has nothing left to forget.
		kc.lift, kc.rejected, kc.rejectedEnd = lift, 0, 0
		kc.minuteEnd, kc.minute = 0, windowCounts{}
	}

	q := key.Quota
	banned := key.BannedUntil.After(now)
	if !banned && kc.minute.total() < q.PerMinute && kc.dayCounts.total() < q.PerDay {
		if kc.minuteEnd == 0 {
			kc.minuteEnd = now.Add(l.cfg.MinuteWindow).UnixMilli()
		}
		kc.minute.mine++
		kc.dayCounts.mine++
		kc.unsent = l.shared != nil
		return l.keyDecision(key.Quota, now, true, kc.minute.total(), kc.minuteEnd, kc.dayCounts.total()), nil
	}

	d := l.keyDecision(key.Quota, now, false, kc.minute.total(), kc.minuteEnd, kc.dayCounts.total())
	if banned {
		return d.banned(key.BannedUntil), nil
	}
	if q.BanFor <= 0 {
		return d, nil
	}
	if kc.rejectedEnd == 0 {
		kc.rejectedEnd = now.Add(l.cfg.MinuteWindow).UnixMilli()
	}
	if kc.rejected++; kc.rejected < q.banAfter() {
		return d, nil
	}
	until := now.Add(q.BanFor)
	// Saved under the key's lock: the next request reads the ban.
	if err := l.saveBan(key.ID, until); err != nil {
		return Decision{}, err
	}
	return d.banned(until), nil
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

// Requests without a valid key are counted per client network in memory on
// ulule/limiter's store (while Redis fails too: they need no more).

func newAddressStore(cfg Config) limiter.Store {
	return memory.NewStoreWithOptions(limiter.StoreOptions{Prefix: cfg.Prefix + ":anonymous", CleanUpInterval: time.Minute})
}

// addressLocally is TakeAnonymous (take) or PeekAnonymous in memory.
func (l *Limiter) addressLocally(ctx context.Context, network string, take bool) (Decision, error) {
	rate := limiter.Rate{Period: l.cfg.MinuteWindow, Limit: l.cfg.AnonymousPerMinute}
	s := l.stripe(network)
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := l.addresses.Peek(ctx, network, rate)
	if err != nil {
		return Decision{}, err
	}
	refused := take && c.Remaining == 0
	if take && !refused {
		if c, err = l.addresses.Increment(ctx, network, 1, rate); err != nil {
			return Decision{}, err
		}
	}
	// The store reports the reset in whole seconds, rounded down: a second
	// more keeps Retry-After from ever being early, and no window ends later
	// than a window from now.
	now := time.Now() // the store's clock
	reset := time.Unix(c.Reset+1, 0)
	if latest := now.Add(l.cfg.MinuteWindow); reset.After(latest) {
		reset = latest
	}
	return l.addressDecision(now, c.Limit-c.Remaining, reset, refused), nil
}

func (l *Limiter) addressDecision(now time.Time, count int64, reset time.Time, refused bool) Decision {
	return Decision{At: now, Windows: []Window{
		newWindow("minute", l.cfg.MinuteWindow, l.cfg.AnonymousPerMinute, count, reset, refused),
	}}
}

// forgetEvery is how often the counts of keys whose windows have all ended
// are dropped.
const forgetEvery = time.Minute

func (l *Limiter) forgetLoop() {
	defer l.work.Done()
	t := time.NewTicker(forgetEvery)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.forgetEnded(l.cfg.Now())
		}
	}
}

// forgetEnded drops the counts of keys with nothing left to count at now:
// no minute window, no day count of today, no rejections, nothing Redis
// lacks.
func (l *Limiter) forgetEnded(now time.Time) {
	nowMS, day := now.UnixMilli(), dayOf(now)
	for i := range l.stripes {
		s := &l.stripes[i]
		s.mu.Lock()
		for id, kc := range s.keys {
			if kc.minuteEnd <= nowMS && kc.rejectedEnd <= nowMS && kc.day < day && !kc.unsent {
				delete(s.keys, id)
			}
		}
		s.mu.Unlock()
	}
}
