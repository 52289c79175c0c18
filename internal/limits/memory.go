package limits

import (
	"context"
	"hash/maphash"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/store/memory"
)

// memoryStore counts in this process's memory. Alone, that is the whole
// count. Under a redisStore, it is what this instance knows of each key's
// windows: what Redis answered last, and what this instance admitted since.
// While Redis fails, the instance decides from it alone, and once Redis
// answers again it gives Redis what it admitted meanwhile, and what Redis
// lost.
type memoryStore struct {
	cfg    Config
	ledger Ledger
	logger *slog.Logger
	// shared: a redisStore's counts in memory; admitted requests are marked
	// unsent until Redis has them.
	shared bool

	// stripes hold the keys' counts under 64 locks.
	stripes *[stripes]stripe
	seed    maphash.Seed
	// fromLedger is what the ledger said each key and customer was served
	// today.
	fromLedger ledgerCounts
	// rereading is 0, or 1 while a read of the ledger runs in the
	// background (readLedgerSoon), 2 when it is to run once more.
	rereading atomic.Int32
	// addresses counts requests without credentials per window and client
	// network, on ulule/limiter's memory store.
	addresses limiter.Store

	stop chan struct{} // closed by close: background work ends
	work sync.WaitGroup
}

// newMemoryStore returns a memoryStore whose day windows start from what the
// ledger says each key was served today.
func newMemoryStore(cfg Config, ledger Ledger, logger *slog.Logger, shared bool) (*memoryStore, error) {
	m := &memoryStore{
		cfg: cfg, ledger: ledger, logger: logger, shared: shared, stripes: newStripes(), seed: maphash.MakeSeed(),
		addresses: memory.NewStoreWithOptions(limiter.StoreOptions{Prefix: cfg.Prefix, CleanUpInterval: time.Minute}),
		stop:      make(chan struct{}),
	}
	if err := m.readLedger(cfg.Now()); err != nil {
		return nil, err
	}
	m.work.Add(1)
	go m.forgetLoop()
	return m, nil
}

func (m *memoryStore) counting() string { return "memory" }
func (m *memoryStore) lost() int64      { return 0 }

func (m *memoryStore) close() error {
	close(m.stop)
	m.work.Wait()
	return nil
}

// windowCounts is one window of a key or a customer as this instance knows
// it.
type windowCounts struct {
	mine   int64 // admitted by this instance
	others int64 // admitted by the other instances, as last known: never more than they did
}

func (w windowCounts) total() int64 { return w.mine + w.others }

// keyCounts is what this instance knows of one key's windows, or of one
// customer's (named by Key.windows).
type keyCounts struct {
	minuteEnd int64 // the minute window's end, ms since the epoch; 0: no window
	minute    windowCounts
	day       int64 // the UTC day of dayCounts
	dayCounts windowCounts
	// Rejections towards a ban, counted here while counting in memory, until
	// rejectedEnd (ms since the epoch).
	rejected, rejectedEnd int64
	// A ban decided here, from banBegan to banEnds (ms since the epoch): it
	// holds at once, before its record in the ledger is read.
	banBegan, banEnds int64
	lift              int64 // the ban lift (Key.BanLifted, ms) applied here
	unsent            bool  // admitted requests here that Redis does not have yet
	// gap: the minute window's requests admitted here while Redis failed,
	// which Redis gets added to its window once it answers again, whichever
	// window that is.
	gap bool
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

func (m *memoryStore) stripe(id string) *stripe {
	return &m.stripes[maphash.String(m.seed, id)%stripes]
}

// lockCounts returns the counts of key id as they stand at now, with its
// stripe locked: the caller unlocks it.
func (m *memoryStore) lockCounts(id string, now time.Time) (*keyCounts, *stripe) {
	s := m.stripe(id)
	s.mu.Lock()
	kc := s.keys[id]
	if kc == nil {
		kc = &keyCounts{}
		s.keys[id] = kc
		if strings.HasPrefix(id, customerWindows) {
			// A customer's windows this instance has not counted in today,
			// maybe since its plan counts per customer: its day window
			// starts from what its keys were served today.
			m.readLedgerSoon()
		}
	}
	nowMS, day := now.UnixMilli(), dayOf(now)
	if kc.minuteEnd != 0 && kc.minuteEnd <= nowMS {
		kc.minuteEnd, kc.minute, kc.gap = 0, windowCounts{}, false
	}
	if kc.day != day {
		kc.day, kc.dayCounts = day, windowCounts{others: m.fromLedger.of(id, day)}
	}
	if kc.rejectedEnd <= nowMS {
		kc.rejected, kc.rejectedEnd = 0, 0
	}
	return kc, s
}

// takeKey decides one request of key in memory.
func (m *memoryStore) takeKey(_ context.Context, key Key, now time.Time) (counts, error) {
	kc, s := m.lockCounts(key.windows(), now)
	defer s.mu.Unlock()
	nowMS := now.UnixMilli()
	lift := unixMilli(key.BanLifted)
	if lift > kc.banBegan && kc.banEnds > nowMS {
		kc.banEnds = 0 // lifted in the ledger since it began
	}
	if lift > kc.lift && nowMS-lift < ms(m.cfg.MinuteWindow) {
		// Staff lifted a ban since: the rejections and the minute window
		// before the lift are forgotten, once. A lift older than a minute
		// window has nothing left to forget.
		kc.lift, kc.rejected, kc.rejectedEnd = lift, 0, 0
		kc.minuteEnd, kc.minute, kc.gap = 0, windowCounts{}, false
	}

	q := key.Quota
	c := counts{banLeft: kc.banEnds - nowMS}
	if !key.BannedUntil.After(now) && c.banLeft <= 0 {
		if kc.minute.total() < q.PerMinute && kc.dayCounts.total() < q.PerDay {
			if kc.minuteEnd == 0 {
				kc.minuteEnd = now.Add(m.cfg.MinuteWindow).UnixMilli()
			}
			kc.minute.mine++
			kc.dayCounts.mine++
			kc.unsent, kc.gap = m.shared, m.shared
			c.admitted = true
		} else if q.BanFor > 0 {
			if kc.rejectedEnd == 0 {
				kc.rejectedEnd = now.Add(m.cfg.MinuteWindow).UnixMilli()
			}
			if kc.rejected++; kc.rejected >= q.banAfter() {
				kc.banBegan, kc.banEnds = nowMS, nowMS+ms(q.BanFor)
				c.banLeft, c.banning = ms(q.BanFor), true
			}
		}
	}
	c.minuteCount, c.minuteMine, c.minuteEnd = kc.minute.total(), kc.minute.mine, kc.minuteEnd
	c.dayCount, c.dayMine = kc.dayCounts.total(), kc.dayCounts.mine
	return c, nil
}

// known is what kc tells Redis.
func (kc *keyCounts) known() known {
	return known{minuteEnd: kc.minuteEnd, minuteMine: kc.minute.mine, minuteOthers: kc.minute.others, gap: kc.gap,
		day: kc.day, dayMine: kc.dayCounts.mine, dayOthers: kc.dayCounts.others}
}

// learn takes in what Redis answered for the day of k: it only ever raises
// what kc knows, as answers may arrive out of order.
func (kc *keyCounts) learn(k known, r counts) {
	switch {
	case r.minuteEnd == kc.minuteEnd && r.minuteEnd != 0:
		kc.minute.mine = max(kc.minute.mine, r.minuteMine)
		kc.minute.others = max(kc.minute.others, r.minuteCount-r.minuteMine)
	case r.minuteEnd > kc.minuteEnd, k.gap && r.minuteEnd != 0 && k.minuteEnd == kc.minuteEnd:
		// A newer window, or Redis's window that took in this instance's
		// requests of the gap: what this instance admitted since it asked
		// goes on in it.
		since := kc.minute.mine - k.minuteMine
		if k.minuteEnd != kc.minuteEnd {
			since = 0
		}
		kc.minuteEnd = r.minuteEnd
		kc.minute = windowCounts{mine: r.minuteMine + since, others: r.minuteCount - r.minuteMine}
		kc.gap = false
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

// takeAddress is a request without credentials in memory.
func (m *memoryStore) takeAddress(ctx context.Context, w addressWindow, network string, take bool) (addressCounts, error) {
	rate := limiter.Rate{Period: m.cfg.MinuteWindow, Limit: w.limit}
	name := w.name + ":" + network
	s := m.stripe(name)
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := m.addresses.Peek(ctx, name, rate)
	if err != nil {
		return addressCounts{}, err
	}
	refused := take && c.Remaining == 0
	if take && !refused {
		if c, err = m.addresses.Increment(ctx, name, 1, rate); err != nil {
			return addressCounts{}, err
		}
	}
	// The store reports the reset in whole seconds, rounded down: a second
	// more keeps Retry-After from ever being early, and no window ends later
	// than a window from now.
	now := time.Now() // the store's clock
	reset := time.Unix(c.Reset+1, 0)
	if latest := now.Add(m.cfg.MinuteWindow); reset.After(latest) {
		reset = latest
	}
	return addressCounts{at: now, count: c.Limit - c.Remaining, reset: reset, refused: refused}, nil
}

// forgetEvery is how often the counts of keys whose windows have all ended
// are dropped.
const forgetEvery = time.Minute

func (m *memoryStore) forgetLoop() {
	defer m.work.Done()
	t := time.NewTicker(forgetEvery)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			m.forgetEnded(m.cfg.Now())
		}
	}
}

// forgetEnded drops the counts of keys with nothing left to count at now:
// no minute window, no day count of today, no rejections, no ban, nothing
// Redis lacks.
func (m *memoryStore) forgetEnded(now time.Time) {
	nowMS, day := now.UnixMilli(), dayOf(now)
	for i := range m.stripes {
		s := &m.stripes[i]
		s.mu.Lock()
		for id, kc := range s.keys {
			if kc.minuteEnd <= nowMS && kc.rejectedEnd <= nowMS && kc.banEnds <= nowMS && kc.day < day && !kc.unsent {
				delete(s.keys, id)
			}
		}
		s.mu.Unlock()
	}
}
