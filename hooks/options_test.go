package hooks_test

import (
	"strings"
	"testing"
	"time"

	"petstore/hooks"
	"petstore/internal/cluster"
	"petstore/internal/datadir"
	"petstore/internal/limits"
)

// Options.Check passes the defaults and refuses each value serve cannot
// use, naming its flag, and never the Redis password.
func TestOptionsCheckNamesTheFlag(t *testing.T) {
	if err := (hooks.Options{Startup: &datadir.StartupConfig{}}).Check(); err != nil {
		t.Fatalf("the zero options: %v", err)
	}
	for want, opts := range map[string]hooks.Options{
		`invalid --public-url (or PETSTORE_PUBLIC_URL) "shop.example.org/v1"`: {PublicURL: "shop.example.org/v1"},
		`--ratelimit-redis: scheme "http"`:                                    {Limits: limits.Config{RedisURL: "http://:hunter2@127.0.0.1:6379"}},
		`--ratelimit-prefix "pet{store}"`:                                     {Limits: limits.Config{RedisURL: "redis+cluster://127.0.0.1:7000", Prefix: "pet{store}"}},
		`--ratelimit-anonymous -1`:                                            {Limits: limits.Config{AnonymousPerMinute: -1}},
		`invalid --request-log (or PETSTORE_REQUEST_LOG) "some"`:              {RequestLog: "some"},
		`invalid --proxy-addresses (or PETSTORE_PROXY_ADDRESSES) "proxy"`:     {Server: hooks.ServerConfig{ProxyAddresses: "proxy"}},
		`invalid --max-conns (or PETSTORE_MAX_CONNS) "-1"`:                    {Server: hooks.ServerConfig{MaxConns: -1}},
		`invalid --drain-delay (or PETSTORE_DRAIN_DELAY) "-1s"`:               {Server: hooks.ServerConfig{DrainDelay: -time.Second}},
		`invalid --audit-retention (or PETSTORE_AUDIT_RETENTION) "-1h0m0s"`:   {AuditRetention: -time.Hour},
		`invalid --lock-timeout (or PETSTORE_LOCK_TIMEOUT) "-1s"`:             {Startup: &datadir.StartupConfig{LockTimeout: -time.Second}},
		`--cluster-sync acknowledges a create once shipped`:                   {Cluster: cluster.Config{Sync: true}},
	} {
		err := opts.Check()
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Check = %v, want %q", err, want)
		}
	}
}
