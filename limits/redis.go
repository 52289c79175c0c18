package limits

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

func init() {
	// go-redis logs each failed dial to stderr on its own; failures reach the
	// app's log through the Limiter instead, once per change of state.
	redis.SetLogger(silentRedisLogger{})
}

type silentRedisLogger struct{}

func (silentRedisLogger) Printf(context.Context, string, ...any) {}

// redisTimeout bounds every Redis call unless the URL says otherwise, so
// that a dead Redis slows requests by at most this much before they fall
// back to local counters.
const redisTimeout = 250 * time.Millisecond

var (
	//go:embed take_key.lua
	takeKeySource string
	//go:embed take_address.lua
	takeAddressSource string

	// Run with EVALSHA; go-redis sends the source again on NOSCRIPT (a
	// restarted Redis, a new primary after a failover).
	takeKeyScript     = redis.NewScript(takeKeySource)
	takeAddressScript = redis.NewScript(takeAddressSource)
)

// redisCounter counts in Redis, shared by every instance: one script run,
// one round trip, per counted request.
type redisCounter struct {
	client redis.UniversalClient
	where  string // for messages: an address, or a master name and its sentinels

	// Key prefixes, e.g. "petstore:minute:", followed by a key id or an IP.
	address, minute, day, rejected, ban string

	up atomic.Bool // false while Redis fails and the Limiter counts locally
}

// newRedisCounter connects to the Redis of rawURL: redis://HOST:PORT/DB, or,
// with a master_name parameter, a primary found through Redis Sentinel
// (go-redis's failover URL). Redis must answer now: a server that cannot
// share its counters refuses to start rather than count alone.
func newRedisCounter(rawURL, prefix string) (*redisCounter, error) {
	client, where, err := newRedisClient(rawURL)
	if err != nil {
		return nil, fmt.Errorf("--ratelimit-redis: %w", err)
	}
	r := &redisCounter{
		client: client, where: where,
		address: prefix + ":" + storeAnonymous + ":", minute: prefix + ":" + storeMinute + ":",
		day: prefix + ":" + storeDay + ":", rejected: prefix + ":" + storeRejected + ":", ban: prefix + ":ban:",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.ping(ctx); err != nil {
		client.Close()
		return nil, fmt.Errorf("rate-limit Redis at %s is unreachable: %w", where, err)
	}
	r.up.Store(true)
	return r, nil
}

func newRedisClient(rawURL string) (redis.UniversalClient, string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Error quotes the URL, password included.
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		return nil, "", fmt.Errorf("not a URL: %w", err)
	}
	q := u.Query()
	// Unless the URL sets them: short timeouts and no retries, since the
	// fallback to local counting is the retry.
	bound := func(dial, read, write *time.Duration, retries, dialRetries *int) {
		for name, d := range map[string]*time.Duration{"dial_timeout": dial, "read_timeout": read, "write_timeout": write} {
			if !q.Has(name) {
				*d = redisTimeout
			}
		}
		if !q.Has("max_retries") {
			*retries = -1
		}
		if !q.Has("dialer_retries") {
			*dialRetries = 1
		}
	}
	if q.Has("master_name") {
		opts, err := redis.ParseFailoverURL(rawURL)
		if err != nil {
			return nil, "", err
		}
		bound(&opts.DialTimeout, &opts.ReadTimeout, &opts.WriteTimeout, &opts.MaxRetries, &opts.DialerRetries)
		where := fmt.Sprintf("master %s (sentinels %s)", opts.MasterName, strings.Join(opts.SentinelAddrs, ", "))
		return redis.NewFailoverClient(opts), where, nil
	}
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, "", err
	}
	bound(&opts.DialTimeout, &opts.ReadTimeout, &opts.WriteTimeout, &opts.MaxRetries, &opts.DialerRetries)
	return redis.NewClient(opts), opts.Addr, nil
}

// ping checks that Redis answers and has the scripts cached.
func (r *redisCounter) ping(ctx context.Context) error {
	if err := takeKeyScript.Load(ctx, r.client).Err(); err != nil {
		return err
	}
	return takeAddressScript.Load(ctx, r.client).Err()
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

// unixMilli is t in ms since the epoch; 0 for the zero time.
func unixMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// takeKey is TakeKey in Redis; banned reports that this very request banned
// the key (so that one instance, once, records the ban).
func (r *redisCounter) takeKey(ctx context.Context, cfg Config, key Key, ip string, now time.Time) (d Decision, banned bool, err error) {
	q := key.Quota
	inLedger := 0
	if key.BannedUntil.After(now) {
		inLedger = 1
	}
	res, err := takeKeyScript.Run(ctx, r.client,
		[]string{r.address + ip, r.minute + key.ID, r.day + key.ID, r.rejected + key.ID, r.ban + key.ID},
		cfg.AnonymousPerMinute, ms(cfg.MinuteWindow), q.PerMinute, ms(cfg.DayWindow), q.PerDay,
		q.banAfter(), ms(q.BanFor), inLedger, now.UnixMilli(), unixMilli(key.BanLifted),
	).Int64Slice()
	if err != nil {
		return Decision{}, false, err
	}
	if len(res) == 3 && res[0] == 1 {
		return Decision{Windows: []Window{
			newWindow("minute", cfg.MinuteWindow, cfg.AnonymousPerMinute, res[1], now.Add(time.Duration(res[2])*time.Millisecond)),
		}}, false, nil
	}
	if len(res) != 7 {
		return Decision{}, false, fmt.Errorf("rate-limit script returned %d values", len(res))
	}
	d = Decision{Windows: []Window{
		newWindow("minute", cfg.MinuteWindow, q.PerMinute, res[1], now.Add(time.Duration(res[2])*time.Millisecond)),
		newWindow("day", cfg.DayWindow, q.PerDay, res[3], now.Add(time.Duration(res[4])*time.Millisecond)),
	}}
	if inLedger == 1 {
		d.BannedUntil = key.BannedUntil
	}
	// A ban another instance decided holds here at once, before its record
	// in the ledger is read.
	if until := now.Add(time.Duration(res[5]) * time.Millisecond); res[5] > 0 && until.After(d.BannedUntil) {
		d.BannedUntil = until
	}
	return d, res[6] == 1, nil
}

// takeAddress is TakeAnonymous in Redis.
func (r *redisCounter) takeAddress(ctx context.Context, cfg Config, ip string, now time.Time) (Decision, error) {
	res, err := takeAddressScript.Run(ctx, r.client, []string{r.address + ip}, ms(cfg.MinuteWindow)).Int64Slice()
	if err != nil {
		return Decision{}, err
	}
	if len(res) != 2 {
		return Decision{}, fmt.Errorf("rate-limit script returned %d values", len(res))
	}
	return Decision{Windows: []Window{
		newWindow("minute", cfg.MinuteWindow, cfg.AnonymousPerMinute, res[0], now.Add(time.Duration(res[1])*time.Millisecond)),
	}}, nil
}

// peekAddress is PeekAnonymous in Redis: the address's window as it stands,
// in one round trip.
func (r *redisCounter) peekAddress(ctx context.Context, cfg Config, ip string, now time.Time) (Decision, error) {
	pipe := r.client.Pipeline()
	count := pipe.Get(ctx, r.address+ip)
	ttl := pipe.PTTL(ctx, r.address+ip)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return Decision{}, err
	}
	n, _ := count.Int64() // redis.Nil: no request from ip in this window
	reset := now.Add(cfg.MinuteWindow)
	if t := ttl.Val(); t > 0 {
		reset = now.Add(t)
	}
	return Decision{Windows: []Window{newWindow("minute", cfg.MinuteWindow, cfg.AnonymousPerMinute, n, reset)}}, nil
}

// dayCounts reads the day windows of keys, in one round trip.
func (r *redisCounter) dayCounts(ctx context.Context, keyIDs []string, now time.Time) ([]DayCount, error) {
	pipe := r.client.Pipeline()
	counts := make([]*redis.StringCmd, len(keyIDs))
	ttls := make([]*redis.DurationCmd, len(keyIDs))
	for i, id := range keyIDs {
		counts[i] = pipe.Get(ctx, r.day+id)
		ttls[i] = pipe.PTTL(ctx, r.day+id)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	result := make([]DayCount, len(keyIDs))
	for i, id := range keyIDs {
		result[i].KeyID = id
		used, err := counts[i].Int64()
		if errors.Is(err, redis.Nil) {
			continue // the window is over: nothing used
		}
		if err != nil {
			return nil, err
		}
		if ttl := ttls[i].Val(); used > 0 && ttl > 0 {
			result[i].Used, result[i].Resets = used, now.Add(ttl)
		}
	}
	return result, nil
}

// seedDayCounts starts the day windows that Redis does not have (it was
// restarted empty, or is new) from counts saved in the ledger.
func (r *redisCounter) seedDayCounts(ctx context.Context, counts []DayCount, now time.Time) error {
	pipe := r.client.Pipeline()
	for _, c := range counts {
		if left := c.Resets.Sub(now); left > time.Millisecond && c.Used > 0 {
			pipe.SetNX(ctx, r.day+c.KeyID, c.Used, left)
		}
	}
	_, err := pipe.Exec(ctx)
	return err
}
