package limits

import (
	"context"
	"time"
)

// The Limiter is a small core over a store, the seam where counts are kept,
// as in ulule/limiter. The core turns a store's counts into decisions and
// headers, and records bans in the ledger; a store decides each request
// against its windows:
//   - memoryStore counts in this process's memory;
//   - redisStore counts in a Redis shared by every instance (one server,
//     Sentinel, or a Redis Cluster), one script call per request, and in a
//     memoryStore of its own while Redis fails.
//
// store_test.go holds one conformance suite that every store passes.
type store interface {
	// takeKey decides one request of key at now, as Limiter.TakeKey
	// describes: admitted or not, the windows after it, and the key's ban.
	// A key banned in the ledger (key.BannedUntil) is refused without
	// counting a rejection.
	takeKey(ctx context.Context, key Key, now time.Time) (counts, error)
	// takeAddress counts one request without credentials from network in
	// window w (take), unless the window is at its limit, or reads the
	// window as it stands.
	takeAddress(ctx context.Context, w addressWindow, network string, take bool) (addressCounts, error)
	// counting says where the store counts now: "memory", "redis", or
	// "local" while Redis fails.
	counting() string
	// lost is how many times counting moved from a shared store to local.
	lost() int64
	close() error
}

// counts is a store's answer on one request of a key.
type counts struct {
	admitted                           bool
	minuteCount, minuteMine, minuteEnd int64 // minuteEnd: ms since the epoch; 0: no window
	dayCount, dayMine                  int64
	banLeft                            int64 // ms; 0 or less: no ban
	banning                            bool  // this request banned the key
}

// addressWindow is a minute window per client network of the requests that
// carry no credentials: each has a name of its own among the counters, so
// that its networks count apart from the other's.
type addressWindow struct {
	name  string // "anonymous": /v1 without a valid API key; "guest": the rest of the site without PocketBase auth
	limit int64
}

// addressCounts is a store's answer on one request without credentials.
type addressCounts struct {
	at      time.Time // the store's clock when it counted
	count   int64
	reset   time.Time
	refused bool
}
