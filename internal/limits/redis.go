package limits

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
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

// redisStore counts in Redis, shared by every instance: one script run,
// one round trip, per counted request. While Redis fails, it counts in its
// memoryStore (redis_failover.go).
type redisStore struct {
	cfg    Config
	logger *slog.Logger
	// local is what this instance knows of each key's windows, and where it
	// counts while Redis fails.
	local  *memoryStore
	client redis.UniversalClient
	where  string // for messages: an address, a master name and its sentinels, or a cluster's seeds
	// instance names this process in the Redis windows' counts.
	instance string

	// Key prefixes: "petstore:key:" followed by an API key's id and a UTC
	// day, "petstore:customer:" followed by a customer's id and a UTC day
	// (its keys' shared windows); "petstore:" followed by an address
	// window's name, ":" and a client network ("petstore:anonymous:192.0.2.1").
	key, customer, address string
	// cluster: a Redis Cluster, where a key's or customer's id is a hash
	// tag, "petstore:key:{ID}:DAY", so that all of its windows live in one
	// slot.
	cluster  bool
	dayNames dayNames

	up        atomic.Bool  // false while Redis fails and the store counts locally
	lostRuns  atomic.Int64 // times counting moved from Redis to local
	downSince atomic.Int64 // when counting last moved to local, ms since the epoch
	// meanwhile: the requests decided locally since Redis last answered
	// again, for the message that says it does.
	meanwhile struct{ admitted, refused, keyless atomic.Int64 }

	stop chan struct{} // closed by close: background work ends
	work sync.WaitGroup
}

// newRedisStore connects to cfg.Redis. Redis must answer now: a server
// that cannot share its counters refuses to start rather than count alone.
func newRedisStore(cfg Config, ledger Ledger, logger *slog.Logger) (*redisStore, error) {
	client := cfg.Redis.connect()
	where, cluster := cfg.Redis.where, cfg.Redis.cluster
	r := &redisStore{
		cfg: cfg, logger: logger, client: client, where: where, instance: newInstanceID(), cluster: cluster,
		key: cfg.Prefix + ":key:", customer: cfg.Prefix + ":customer:", address: cfg.Prefix + ":", stop: make(chan struct{}),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.ping(ctx); err != nil {
		client.Close()
		return nil, fmt.Errorf("rate-limit Redis at %s is unreachable: %w", where, err)
	}
	var err error
	if r.local, err = newMemoryStore(cfg, ledger, logger, true); err != nil {
		client.Close()
		return nil, err
	}
	r.up.Store(true)
	return r, nil
}

// newInstanceID is a name for this process, unique among the instances
// sharing a Redis: 64 random bits.
func newInstanceID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (r *redisStore) counting() string {
	if r.up.Load() {
		return "redis"
	}
	return "local"
}

func (r *redisStore) lost() int64 { return r.lostRuns.Load() }

func (r *redisStore) close() error {
	close(r.stop)
	r.work.Wait()
	_ = r.local.close()
	return r.client.Close()
}

// takeKey decides one request of key in Redis, telling it what this
// instance knows; locally while Redis fails.
func (r *redisStore) takeKey(ctx context.Context, key Key, now time.Time) (counts, error) {
	if r.up.Load() {
		kc, s := r.local.lockCounts(key.windows(), now)
		k := kc.known()
		s.mu.Unlock()
		c, err := r.runTakeKey(ctx, key, k, now)
		if err == nil {
			s.mu.Lock()
			kc.learn(k, c)
			s.mu.Unlock()
			return c, nil
		}
		r.failed(err)
	}
	c, err := r.local.takeKey(ctx, key, now)
	if c.admitted {
		r.meanwhile.admitted.Add(1)
	} else if err == nil {
		r.meanwhile.refused.Add(1)
	}
	return c, err
}

// takeAddress counts a request without credentials in Redis; locally while
// Redis fails.
func (r *redisStore) takeAddress(ctx context.Context, w addressWindow, network string, take bool) (addressCounts, error) {
	if r.up.Load() {
		var c addressCounts
		var err error
		name := r.address + w.name + ":" + network
		if take {
			c, err = r.runTakeAddress(ctx, name, w.limit, time.Now())
		} else {
			c, err = r.peekAddress(ctx, name, time.Now())
		}
		if err == nil {
			return c, nil
		}
		r.failed(err)
	}
	if take {
		r.meanwhile.keyless.Add(1)
	}
	return r.local.takeAddress(ctx, w, network, take)
}

// Schemes of a Redis Cluster's URL: go-redis's cluster URL, told apart by
// its scheme.
const (
	clusterScheme    = "redis+cluster"
	clusterTLSScheme = "rediss+cluster"
)

// Redis is a parsed --ratelimit-redis: the Redis that keeps the counters.
type Redis struct {
	connect func() redis.UniversalClient // makes a client; it dials on first use
	where   string                       // for messages: an address, a master name and its sentinels, or a cluster's seeds
	cluster bool                         // a Redis Cluster
	store   string                       // the URL without its passwords
}

// String is the URL without its passwords: the user part's, and the
// query's (Sentinel's password= and sentinel_password=).
func (r *Redis) String() string { return r.store }

// ParseRedis reads the Redis URL of --ratelimit-redis, without dialling:
//   - redis://HOST:PORT/DB, or rediss:// with TLS;
//   - with a master_name parameter, a primary found through Redis Sentinel
//     (go-redis's failover URL);
//   - redis+cluster://HOST:PORT?addr=HOST2:PORT2&..., or rediss+cluster://
//     with TLS: a Redis Cluster found through these seed nodes (go-redis's
//     cluster URL).
//
// With TLS, tls_ca_file=PATH names the PEM certificates of the authorities
// to trust instead of the system's (a managed service's own CA); they are
// read here. Its errors never hold a password.
func ParseRedis(rawURL string) (*Redis, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Error quotes the URL, password included.
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		return nil, fmt.Errorf("not a URL: %w", err)
	}
	r := &Redis{store: redacted(u)}
	q := u.Query()
	var roots *x509.CertPool
	if q.Has("tls_ca_file") {
		if u.Scheme != "rediss" && u.Scheme != clusterTLSScheme {
			return nil, errors.New("tls_ca_file needs TLS: rediss:// or rediss+cluster://")
		}
		if roots, err = readCAFile(q.Get("tls_ca_file")); err != nil {
			return nil, err
		}
		q.Del("tls_ca_file")
		u.RawQuery = q.Encode()
	}
	// Unless the URL sets them: short timeouts and no retries, since the
	// fallback to local counting is the retry.
	bound := func(dial, read, write *time.Duration, retries, dialRetries *int, tlsConfig *tls.Config) {
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
		if tlsConfig != nil && roots != nil {
			tlsConfig.RootCAs = roots
		}
	}
	switch u.Scheme {
	case clusterScheme, clusterTLSScheme:
		if db := strings.Trim(u.Path, "/"); db != "" && db != "0" {
			return nil, fmt.Errorf("a Redis Cluster has database 0 only, not %q", db)
		}
		if q.Has("master_name") {
			return nil, errors.New("master_name names a Sentinel primary: a Redis Cluster has none")
		}
		u.Scheme, u.Path = strings.TrimSuffix(u.Scheme, "+cluster"), ""
		opts, err := redis.ParseClusterURL(u.String())
		if err != nil {
			return nil, err
		}
		bound(&opts.DialTimeout, &opts.ReadTimeout, &opts.WriteTimeout, &opts.MaxRetries, &opts.DialerRetries, opts.TLSConfig)
		r.connect = func() redis.UniversalClient { return redis.NewClusterClient(opts) }
		r.where, r.cluster = fmt.Sprintf("cluster (seeds %s)", strings.Join(opts.Addrs, ", ")), true
		return r, nil
	case "redis", "rediss":
	default:
		return nil, fmt.Errorf("scheme %q: want redis://, rediss://, %s:// or %s://", u.Scheme, clusterScheme, clusterTLSScheme)
	}
	if q.Has("master_name") {
		opts, err := redis.ParseFailoverURL(u.String())
		if err != nil {
			return nil, err
		}
		bound(&opts.DialTimeout, &opts.ReadTimeout, &opts.WriteTimeout, &opts.MaxRetries, &opts.DialerRetries, opts.TLSConfig)
		r.connect = func() redis.UniversalClient { return redis.NewFailoverClient(opts) }
		r.where = fmt.Sprintf("master %s (sentinels %s)", opts.MasterName, strings.Join(opts.SentinelAddrs, ", "))
		return r, nil
	}
	opts, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, err
	}
	bound(&opts.DialTimeout, &opts.ReadTimeout, &opts.WriteTimeout, &opts.MaxRetries, &opts.DialerRetries, opts.TLSConfig)
	r.connect = func() redis.UniversalClient { return redis.NewClient(opts) }
	r.where = opts.Addr
	return r, nil
}

// readCAFile reads the PEM certificates of tls_ca_file.
func readCAFile(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tls_ca_file: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("tls_ca_file %s holds no PEM certificate", path)
	}
	return roots, nil
}

// ping checks that Redis answers and has the scripts cached.
func (r *redisStore) ping(ctx context.Context) error {
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

// dayGrace is how long a key's day outlives it in Redis: an instance whose
// clock is behind still counts in it, and it must not start again.
const dayGrace = time.Hour

// known is what an instance knows of a key's windows when it calls Redis.
type known struct {
	minuteEnd                int64 // ms since the epoch; 0: no window
	minuteMine, minuteOthers int64
	day                      int64 // the UTC day of the day counts
	dayMine, dayOthers       int64
	// gap: minuteMine holds requests admitted while Redis failed, in a
	// window Redis may not have: Redis adds them to the window it has.
	gap bool
}

// keyCall is the keys and arguments of take_key.lua for one key on the day
// of k: deciding a request (decide) or only adding this instance's counts.
func (r *redisStore) keyCall(key Key, k known, now time.Time, decide bool) ([]string, []any) {
	cfg := r.cfg
	q := key.Quota
	flag := func(b bool) string {
		if b {
			return "1"
		}
		return "0"
	}
	return []string{r.keyName(key.windows(), k.day)},
		[]any{r.instance, now.UnixMilli(), flag(decide),
			ms(cfg.MinuteWindow), q.PerMinute, k.minuteEnd, k.minuteMine, k.minuteOthers,
			ms(dayEnd(k.day).Add(dayGrace).Sub(now)), q.PerDay, k.dayMine, k.dayOthers,
			q.banAfter(), ms(q.BanFor), flag(key.BannedUntil.After(now)), unixMilli(key.BanLifted), flag(k.gap)}
}

// keyName is the Redis key of the windows named windows (Key.windows) on
// day: "petstore:key:ID:DAY" for an API key's, "petstore:customer:ID:DAY"
// for a customer's.
func (r *redisStore) keyName(windows string, day int64) string {
	prefix := r.key
	if id, ok := strings.CutPrefix(windows, customerWindows); ok {
		prefix, windows = r.customer, id
	}
	if r.cluster {
		return prefix + "{" + windows + "}:" + r.dayNames.of(day)
	}
	return prefix + windows + ":" + r.dayNames.of(day)
}

func parseCounts(res []int64) (counts, error) {
	if len(res) != 8 {
		return counts{}, fmt.Errorf("rate-limit script returned %d values", len(res))
	}
	return counts{
		admitted: res[0] == 1, minuteCount: res[1], minuteMine: res[2], minuteEnd: res[3],
		dayCount: res[4], dayMine: res[5], banLeft: res[6], banning: res[7] == 1,
	}, nil
}

// runTakeKey runs take_key.lua for one request of key, telling Redis what
// this instance knows (k).
func (r *redisStore) runTakeKey(ctx context.Context, key Key, k known, now time.Time) (counts, error) {
	keys, args := r.keyCall(key, k, now, true)
	res, err := takeKeyScript.Run(ctx, r.client, keys, args...).Int64Slice()
	if err != nil {
		return counts{}, err
	}
	return parseCounts(res)
}

// unsent is one key's counts that Redis lacks.
type unsent struct {
	key   Key
	known known
}

// addCounts gives Redis what this instance counted while Redis failed, for
// every key in one round trip, and returns what Redis counts now.
func (r *redisStore) addCounts(ctx context.Context, batch []unsent, now time.Time) ([]counts, error) {
	pipe := r.client.Pipeline()
	cmds := make([]*redis.Cmd, len(batch))
	for i, c := range batch {
		keys, args := r.keyCall(c.key, c.known, now, false)
		// ping has just loaded the script: no NOSCRIPT fallback in a pipeline.
		cmds[i] = takeKeyScript.EvalSha(ctx, pipe, keys, args...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	result := make([]counts, len(batch))
	for i, cmd := range cmds {
		res, err := cmd.Int64Slice()
		if err == nil {
			result[i], err = parseCounts(res)
		}
		if err != nil {
			return nil, err
		}
	}
	return result, nil
}

// runTakeAddress counts one request in the window named name, unless it is
// at limit (refused).
func (r *redisStore) runTakeAddress(ctx context.Context, name string, limit int64, now time.Time) (addressCounts, error) {
	res, err := takeAddressScript.Run(ctx, r.client, []string{name},
		limit, ms(r.cfg.MinuteWindow)).Int64Slice()
	if err != nil {
		return addressCounts{}, err
	}
	if len(res) != 3 {
		return addressCounts{}, fmt.Errorf("rate-limit script returned %d values", len(res))
	}
	reset := now.Add(r.cfg.MinuteWindow)
	if res[2] > 0 {
		reset = now.Add(time.Duration(res[2]) * time.Millisecond)
	}
	return addressCounts{at: now, count: res[1], reset: reset, refused: res[0] == 0}, nil
}

// peekAddress is the window named name as it stands, in one round trip.
func (r *redisStore) peekAddress(ctx context.Context, name string, now time.Time) (addressCounts, error) {
	pipe := r.client.Pipeline()
	count := pipe.Get(ctx, name)
	ttl := pipe.PTTL(ctx, name)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return addressCounts{}, err
	}
	n, _ := count.Int64() // redis.Nil: no request from network in this window
	reset := now.Add(r.cfg.MinuteWindow)
	if t := ttl.Val(); t > 0 {
		reset = now.Add(t)
	}
	return addressCounts{at: now, count: n, reset: reset}, nil
}

// dayNames names UTC days (YYYY-MM-DD) for the day windows' keys, keeping
// the last name made: every request of a day needs the same one.
type dayNames struct{ last atomic.Pointer[dayName] }

type dayName struct {
	day  int64
	name string
}

func (d *dayNames) of(day int64) string {
	if n := d.last.Load(); n != nil && n.day == day {
		return n.name
	}
	n := &dayName{day, time.Unix(day*secondsPerDay, 0).UTC().Format(time.DateOnly)}
	d.last.Store(n)
	return n.name
}
