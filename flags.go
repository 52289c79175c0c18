package main

import (
	"io"

	"github.com/spf13/pflag"

	"petstore/hooks"
	"petstore/internal/audit"
	"petstore/internal/banner"
	"petstore/internal/connlimit"
	"petstore/internal/datadir"
	"petstore/internal/envflag"
	"petstore/internal/limits"
	"petstore/internal/logging"
	"petstore/internal/realtime"
	"petstore/internal/requestlog"
	"petstore/internal/webhooks"
)

// defaultHTTPAddr is PocketBase's serve --http without --https.
const defaultHTTPAddr = "127.0.0.1:8090"

// flagValues are what petstore's flags hold while cobra parses the command
// line; options makes the service's Options of them once it has.
type flagValues struct {
	root, serve *pflag.FlagSet
	self        banner.Invocation

	opts       hooks.Options
	startup    datadir.StartupConfig
	logFormat  string
	logLevel   string
	requestLog string
}

// bindFlags binds every flag petstore adds: those on root apply to every
// command, those on serve to serve alone. Each part's flags are a group
// here, setting its field of hooks.Options; a new part adds its group, and
// its checks to Options.Check. Every flag has a variable (envflag).
func bindFlags(root, serve *pflag.FlagSet, self banner.Invocation) *flagValues {
	f := &flagValues{root: root, serve: serve, self: self}
	o := &f.opts

	// The console.
	root.StringVar(&f.logFormat, "log-format", logging.Text, "console log format: text, or json (one object a line)")
	root.StringVar(&f.logLevel, "log-level", "info", "lowest level logged on the console: debug, info, warn or error")

	// The start, which opens the data directory.
	root.DurationVar(&f.startup.LockTimeout, "lock-timeout", datadir.DefaultLockTimeout,
		"how long a start waits for another process's start on the same data directory (which holds the start lock while it applies migrations)")
	serve.DurationVar(&f.startup.QuickCheck, "quick-check", datadir.DefaultQuickCheck,
		"serve: how long PRAGMA quick_check of data.db may take at start (a damaged database is refused); 0 skips the check")

	// Where clients and Prometheus reach the service.
	serve.StringVar(&o.MetricsAddr, "metrics-addr", "",
		"serve Prometheus metrics at GET /metrics on this address (127.0.0.1:9090), a listener of its own; none by default")
	serve.StringVar(&o.PublicURL, "public-url", "",
		"the base URL clients use, ending in /v1, when a reverse proxy is in front (https://shop.example.org/api/v1): Link, Location and the served documents name it")

	// Webhooks.
	serve.BoolVar(&o.WebhooksAllowPrivate, "webhooks-allow-private", false,
		"let webhook endpoints be loopback, private, link-local, CGNAT, metadata, documentation or reserved addresses, or this host's own (a receiver on this machine or network)")

	// Backups.
	serve.BoolVar(&o.AllowBackupRestore, "allow-backup-restore", false,
		"let backups be uploaded and restored through the dashboard and PocketBase's API (a restore replaces every key, plan and pet; the audit trail is carried across)")

	// PocketBase's settings for the backups and mails.
	o.Settings.AddFlags(serve)

	// Rate limits.
	root.StringVar(&o.Limits.RedisURL, "ratelimit-redis", "",
		"keep rate-limit counters in this Redis, shared by several instances (redis://HOST:PORT/DB; Sentinel: redis://SENTINEL:26379/DB?master_name=NAME&addr=SENTINEL2:26379; Redis Cluster: redis+cluster://NODE:6379?addr=NODE2:6379; rediss:// and rediss+cluster:// with TLS, tls_ca_file=PEM for a CA of your own)")
	root.StringVar(&o.Limits.Prefix, "ratelimit-prefix", limits.DefaultPrefix,
		"prefix of the rate-limit counters, to let several deployments share one Redis")
	root.Int64Var(&o.Limits.AnonymousPerMinute, "ratelimit-anonymous", limits.DefaultAnonymousPerMinute,
		"requests per minute without a valid API key, per client network (an IPv4 address, an IPv6 /64)")
	root.Int64Var(&o.Limits.GuestPerMinute, "ratelimit-guest", limits.DefaultGuestPerMinute,
		"requests per minute outside /v1 without signing in (the pages, the dashboard's files, PocketBase's API), per client network")

	// The public listener.
	root.DurationVar(&o.Server.ReadHeaderTimeout, "read-header-timeout", hooks.DefaultReadHeaderTimeout,
		"close connections whose request headers take longer than this to arrive")
	root.DurationVar(&o.Server.BodyTimeout, "body-timeout", hooks.DefaultBodyTimeout,
		"close a connection whose request body has not all arrived this long after its headers")
	root.DurationVar(&o.Server.IdleTimeout, "idle-timeout", hooks.DefaultIdleTimeout,
		"close keep-alive connections that wait longer than this for their next request")
	root.IntVar(&o.Server.MaxConnsPerAddress, "max-conns-per-address", connlimit.DefaultPerAddress,
		"connections one client network (an IPv4 address, an IPv6 /64) may hold open; more are closed at once")
	root.IntVar(&o.Server.MaxConnsPerNetwork, "max-conns-per-network", 0,
		"connections the clients of one wider network (an IPv4 /24, an IPv6 /48) may hold open together; more are closed at once (0: an eighth of --max-conns)")
	root.IntVar(&o.Server.MaxRealtimePerNetwork, "max-realtime-per-network", realtime.DefaultPerNetwork,
		"realtime streams (/api/realtime) the clients of one wider network (an IPv4 /24, an IPv6 /48) may hold open together; more are refused with 429")
	root.StringVar(&o.Server.TrustedProxyHeaders, "trusted-proxy-headers", "",
		"the headers that give the client's address behind the proxies, comma-separated (X-Forwarded-For): set as PocketBase's trusted proxy headers at each start; none: the dashboard's setting")
	root.StringVar(&o.Server.ProxyAddresses, "proxy-addresses", "",
		"the reverse proxies' addresses or networks, comma-separated (127.0.0.1,10.0.0.0/8): --max-conns-per-address does not bound them, and the trusted proxy headers are believed from them alone")
	root.IntVar(&o.Server.MaxConns, "max-conns", 0,
		"connections open in all; more are closed at once (0: 3/4 of the open files limit, at most 10000)")
	root.DurationVar(&o.Server.ShutdownTimeout, "shutdown-timeout", hooks.DefaultShutdownTimeout,
		"on SIGTERM, how long requests in flight may take to finish")

	// What the service records.
	root.StringVar(&f.requestLog, "request-log", string(requestlog.Bounded),
		"which requests go to PocketBase's logs, /v1's and the rest alike: bounded (every error, and 100 successes a second with a row counting the rest), all, or errors (4xx and 5xx) only")
	root.DurationVar(&o.AuditRetention, "audit-retention", audit.DefaultRetention,
		"how long the audit trail (changes of keys, plans, webhook endpoints and categories; backups; cluster leadership) keeps a record (0: forever)")
	root.DurationVar(&o.WebhooksRetention, "webhooks-retention", webhooks.DefaultRetention,
		"how long webhook delivery attempts, and events delivered or failed, are kept (0: forever)")
	root.BoolVar(&o.AccessLog, "access-log", false, "log one console line per /v1 request")
	root.DurationVar(&o.SlowRequest, "slow-request", hooks.DefaultSlowRequest,
		"log /v1 requests that take longer than this as warnings (0: never)")
	root.DurationVar(&o.Server.DrainDelay, "drain-delay", 0,
		"on SIGTERM, how long to keep serving while /readyz answers 503, before the listener closes")

	// Cluster mode.
	o.Cluster.AddFlags(serve)

	envflag.Document(root)
	envflag.Document(serve)
	return f
}

// options sets each flag the command line left unset from its variable,
// and returns the checked options of a command (serve when serving). The
// console and the banner write to stderr and stdout.
func (f *flagValues) options(serving bool, stdout, stderr io.Writer) (hooks.Options, error) {
	// A variable sets the flag's value, not its default: --help never
	// prints a Redis password.
	for _, fs := range []*pflag.FlagSet{f.root, f.serve} {
		if err := envflag.Apply(fs, appFlags...); err != nil {
			return hooks.Options{}, err
		}
	}
	opts := f.opts
	opts.Installer, opts.Self = stdout, f.self
	var err error
	if opts.Console, err = logging.Console(stderr, f.logFormat, f.logLevel); err != nil {
		return hooks.Options{}, err
	}
	if f.logFormat != logging.JSON {
		opts.Banner = stdout // in JSON, the start event carries the addresses
	}
	opts.RequestLog = requestlog.Mode(f.requestLog)
	opts.HTTPS = f.serve.Lookup("https").Value.String() != ""
	opts.HTTPAddr = f.serve.Lookup("http").Value.String()
	if opts.HTTPAddr == "" {
		opts.HTTPAddr = defaultHTTPAddr
	}
	if serving {
		if err := opts.Settings.Load(); err != nil {
			return hooks.Options{}, err
		}
	}
	startup := f.startup
	startup.Serving = serving
	startup.Cluster = serving && opts.Cluster.Enabled()
	opts.Startup = &startup
	return opts, opts.Check()
}
