package limits

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"petstore/testkit/redistest"
)

// redisTestLedger is a Ledger in memory that remembers the bans it saved.
type redisTestLedger struct {
	mu   sync.Mutex
	bans []string
}

func (k *redisTestLedger) SaveBan(keyID string, until time.Time) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.bans = append(k.bans, keyID)
	return nil
}

func (*redisTestLedger) Served(time.Time) (map[string]int64, error) { return nil, nil }

// roundTrips counts the commands and pipelines a go-redis client sends.
type roundTrips struct{ n atomic.Int64 }

func (*roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmds)
	}
}

// Every request is one round trip to Redis, whatever it leads to: a pass, a
// refusal, the ban, a banned key's refusal, a network's request, a network
// over its limit; and every key the limiter writes expires.
func TestRedisOneRoundTripPerRequest(t *testing.T) {
	srv := redistest.Start(t)
	ledger := &redisTestLedger{}
	l, err := New(Config{Redis: redisOf(t, srv.URL(0)), AnonymousPerMinute: 2}, ledger, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	trips := &roundTrips{}
	l.store.(*redisStore).client.AddHook(trips)
	ctx := context.Background()

	take := func(what string, f func() (Decision, error)) Decision {
		t.Helper()
		before := trips.n.Load()
		d, err := f()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if n := trips.n.Load() - before; n != 1 {
			t.Fatalf("%s: %d round trips to Redis, want 1", what, n)
		}
		return d
	}
	key := Key{ID: "k1", Quota: Quota{PerMinute: 2, PerDay: 100, BanFor: time.Minute}}
	takeKey := func() (Decision, error) { return l.TakeKey(ctx, key) }
	for i := range 2 {
		if d := take("within the quota", takeKey); d.Exceeded() || d.Banned() {
			t.Fatalf("request %d refused: %+v", i, d)
		}
	}
	for i := 1; i < MinBanAfter; i++ {
		if d := take("over the quota", takeKey); !d.Exceeded() || d.Banned() {
			t.Fatalf("rejection %d: %+v, want refused, not banned", i, d)
		}
	}
	if d := take("the ban", takeKey); !d.Banned() {
		t.Fatalf("rejection %d: %+v, want banned", MinBanAfter, d)
	}
	if d := take("banned", takeKey); !d.Banned() {
		t.Fatalf("5th request: %+v, want banned", d)
	}
	if len(ledger.bans) != 1 {
		t.Fatalf("bans saved: %v, want one", ledger.bans)
	}

	anonymous := func() (Decision, error) { return l.TakeAnonymous(ctx, "192.0.2.2") }
	for i := range 2 {
		if d := take("without a key", anonymous); d.Exceeded() {
			t.Fatalf("request %d without a key refused: %+v", i, d)
		}
	}
	if d := take("a network over its limit", anonymous); !d.Exceeded() {
		t.Fatalf("3rd request without a key: %+v, want refused", d)
	}

	client := srv.Client(t)
	keys, err := client.Keys(ctx, "*").Result()
	if err != nil || len(keys) != 2 { // k1's day; the network of requests without a key
		t.Fatalf("keys in Redis: %v (%v), want 2", keys, err)
	}
	for _, k := range keys {
		if ttl := client.PTTL(ctx, k).Val(); ttl <= 0 {
			t.Fatalf("%s has no expiry (PTTL %v)", k, ttl)
		}
	}
}

// A Redis that has forgotten the script (restarted, or a new primary after a
// failover) gets it again on NOSCRIPT; counting stays in Redis.
func TestRedisScriptReloadedAfterRestart(t *testing.T) {
	srv := redistest.Start(t)
	l, err := New(Config{Redis: redisOf(t, srv.URL(0)+"?read_timeout=2s&dial_timeout=2s")}, &redisTestLedger{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	key := Key{ID: "k1", Quota: Quota{PerMinute: 10, PerDay: 100}}
	if _, err := l.TakeKey(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if err := srv.Client(t).ScriptFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	d, err := l.TakeKey(context.Background(), key)
	if err != nil || l.Counting() != "redis" || d.Windows[0].Remaining != 8 {
		t.Fatalf("after SCRIPT FLUSH: %+v, %v, counting in %s; want 8 left, counted in Redis", d, err, l.Counting())
	}
}

// --ratelimit-redis URLs that cannot work are refused when parsed, before
// anything dials, with a reason, and without the password; and a Redis
// Cluster's prefix with braces by Config.Check.
func TestRedisURLsRefused(t *testing.T) {
	for _, c := range []struct{ url, prefix, want string }{
		{"http://:hunter2@127.0.0.1:6379/0", "", `scheme "http"`},
		{"redis+cluster://:hunter2@127.0.0.1:7000/1?addr=127.0.0.1:7001", "", "database 0 only"},
		{"redis+cluster://:hunter2@127.0.0.1:7000?master_name=x", "", "master_name"},
		{"redis://:hunter2@127.0.0.1:6379/0?tls_ca_file=/etc/hostname", "", "tls_ca_file needs TLS"},
		{"rediss://:hunter2@127.0.0.1:6379/0?tls_ca_file=/no/such/ca.pem", "", "no such file"},
		{"rediss+cluster://:hunter2@127.0.0.1:7000?tls_ca_file=/etc/hostname", "", "holds no PEM certificate"},
		{"redis+cluster://:hunter2@127.0.0.1:7000?addr=127.0.0.1:7001", "pet{store}", "no braces"},
		{"redis+cluster://:hunter2@127.0.0.1:7000?nonsense=1", "", "unexpected option: nonsense"},
	} {
		redis, err := ParseRedis(c.url)
		if err == nil {
			err = Config{Redis: redis, Prefix: c.prefix}.Check()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: %v; want an error saying %q, without the password", c.url, err, c.want)
		}
	}
}
