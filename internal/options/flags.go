package options

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"petstore/internal/api"
	"petstore/internal/audit"
	"petstore/internal/banner"
	"petstore/internal/cluster"
	"petstore/internal/connlimit"
	"petstore/internal/datadir"
	"petstore/internal/envflag"
	"petstore/internal/limits"
	"petstore/internal/logging"
	"petstore/internal/proxytrust"
	"petstore/internal/realtime"
	"petstore/internal/requestlog"
	"petstore/internal/tracing"
	"petstore/internal/usage"
	"petstore/internal/webhooks"
)

// defaultHTTPAddr is PocketBase's serve --http without --https.
const defaultHTTPAddr = "127.0.0.1:8090"

// Flags are what petstore's flags hold while cobra parses the command
// line: the values pflag types itself (durations, counts, switches) in
// place in opts, the others as given. Parse makes the Options of them.
type Flags struct {
	root, serve *pflag.FlagSet
	self        banner.Invocation
	pocketBase  []string // PocketBase's global flags, whose variables it reads itself

	opts    Options
	startup datadir.StartupConfig
	cluster cluster.Flags
	// The values Parse parses, as given.
	logFormat, logLevel, requestLog, publicURL, metricsAddr, redis, trustedProxyHeaders, proxyAddresses string
}

// Bind binds every flag petstore adds: those on root apply to every
// command, those on serve to serve alone. Each part's flags are a group
// here, setting its field of Options; a new part adds its group, and its
// parse to Parse. Every flag has a variable (envflag), except pocketBase,
// PocketBase's global flags, whose variables the app reads when it is made.
func Bind(root, serve *pflag.FlagSet, self banner.Invocation, pocketBase ...string) *Flags {
	f := &Flags{root: root, serve: serve, self: self, pocketBase: pocketBase}
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
	serve.StringVar(&f.metricsAddr, "metrics-addr", "",
		"serve Prometheus metrics at GET /metrics on this address (127.0.0.1:9090), a listener of its own; none by default")
	serve.StringVar(&f.publicURL, "public-url", "",
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
	root.StringVar(&f.redis, "ratelimit-redis", "",
		"keep rate-limit counters in this Redis, shared by several instances (redis://HOST:PORT/DB; Sentinel: redis://SENTINEL:26379/DB?master_name=NAME&addr=SENTINEL2:26379; Redis Cluster: redis+cluster://NODE:6379?addr=NODE2:6379; rediss:// and rediss+cluster:// with TLS, tls_ca_file=PEM for a CA of your own)")
	root.StringVar(&o.Limits.Prefix, "ratelimit-prefix", limits.DefaultPrefix,
		"prefix of the rate-limit counters, to let several deployments share one Redis")
	root.Int64Var(&o.Limits.AnonymousPerMinute, "ratelimit-anonymous", limits.DefaultAnonymousPerMinute,
		"requests per minute without a valid API key, per client network (an IPv4 address, an IPv6 /64)")
	root.Int64Var(&o.Limits.GuestPerMinute, "ratelimit-guest", limits.DefaultGuestPerMinute,
		"requests per minute outside /v1 without signing in (the pages, the dashboard's files, PocketBase's API), per client network")

	// The public listener.
	root.DurationVar(&o.Server.ReadHeaderTimeout, "read-header-timeout", DefaultReadHeaderTimeout,
		"close connections whose request headers take longer than this to arrive")
	root.DurationVar(&o.Server.BodyTimeout, "body-timeout", DefaultBodyTimeout,
		"close a connection whose request body has not all arrived this long after its headers")
	root.DurationVar(&o.Server.IdleTimeout, "idle-timeout", DefaultIdleTimeout,
		"close keep-alive connections that wait longer than this for their next request")
	root.IntVar(&o.Server.MaxConnsPerAddress, "max-conns-per-address", connlimit.DefaultPerAddress,
		"connections one client network (an IPv4 address, an IPv6 /64) may hold open; more are closed at once")
	root.IntVar(&o.Server.MaxConnsPerNetwork, "max-conns-per-network", 0,
		"connections the clients of one wider network (an IPv4 /24, an IPv6 /48) may hold open together; more are closed at once (0: an eighth of --max-conns)")
	root.IntVar(&o.Server.MaxRealtimePerNetwork, "max-realtime-per-network", realtime.DefaultPerNetwork,
		"realtime streams (/api/realtime) the clients of one wider network (an IPv4 /24, an IPv6 /48) may hold open together; more are refused with 429")
	root.StringVar(&f.trustedProxyHeaders, "trusted-proxy-headers", "",
		"the headers that give the client's address behind the proxies, comma-separated (X-Forwarded-For): set as PocketBase's trusted proxy headers at each start; none: the dashboard's setting")
	root.StringVar(&f.proxyAddresses, "proxy-addresses", "",
		"the reverse proxies' addresses or networks, comma-separated (127.0.0.1,10.0.0.0/8): --max-conns-per-address does not bound them, and the trusted proxy headers are believed from them alone")
	root.IntVar(&o.Server.MaxConns, "max-conns", 0,
		"connections open in all; more are closed at once (0: 3/4 of the open files limit, at most 10000)")
	root.DurationVar(&o.Server.ShutdownTimeout, "shutdown-timeout", DefaultShutdownTimeout,
		"on SIGTERM, how long requests in flight may take to finish")

	// What the service records.
	root.StringVar(&f.requestLog, "request-log", string(requestlog.Bounded),
		"which requests go to PocketBase's logs, /v1's and the rest alike: bounded (every error, and 100 successes a second with a row counting the rest), all, or errors (4xx and 5xx) only")
	root.DurationVar(&o.AuditRetention, "audit-retention", audit.DefaultRetention,
		"how long the audit trail (changes of keys, plans, webhook endpoints and categories; backups; cluster leadership) keeps a record (0: forever)")
	root.DurationVar(&o.UsageRetention, "usage-retention", usage.DefaultRetention,
		"how long the usage history (each key's requests per UTC hour, operation and outcome) keeps an hour (0: forever)")
	root.DurationVar(&o.WebhooksRetention, "webhooks-retention", webhooks.DefaultRetention,
		"how long webhook delivery attempts, and events delivered or failed, are kept (0: forever)")
	root.BoolVar(&o.AccessLog, "access-log", false, "log one console line per /v1 request")
	root.DurationVar(&o.SlowRequest, "slow-request", DefaultSlowRequest,
		"log /v1 requests that take longer than this as warnings (0: never)")
	root.DurationVar(&o.Server.DrainDelay, "drain-delay", 0,
		"on SIGTERM, how long to keep serving while /readyz answers 503, before the listener closes")

	// Cluster mode.
	f.cluster.AddFlags(serve)

	envflag.Document(root)
	envflag.Document(serve)
	return f
}

// Parse sets each flag the command line left unset from its variable, and
// returns the options of a command (serve when serving), every value
// parsed and checked; its error names the flag (and its variable) of the
// first value refused. It dials nothing: a Redis that does not answer is
// serve's to report. The console and the banner write to stderr and stdout.
func (f *Flags) Parse(serving bool, stdout, stderr io.Writer) (Options, error) {
	// A variable sets the flag's value, not its default: --help never
	// prints a Redis password.
	for _, fs := range []*pflag.FlagSet{f.root, f.serve} {
		if err := envflag.Apply(fs, f.pocketBase...); err != nil {
			return Options{}, err
		}
	}
	opts := f.opts
	opts.Installer, opts.Self = stdout, f.self
	var err error
	if opts.Console, err = logging.Console(stderr, f.logFormat, f.logLevel); err != nil {
		return Options{}, err
	}
	if f.logFormat != logging.JSON {
		opts.Banner = stdout // in JSON, the start event carries the addresses
	}
	if opts.RequestLog, err = requestlog.ParseMode(f.requestLog); err != nil {
		return Options{}, invalid("request-log", f.requestLog, err)
	}
	if opts.PublicURL, err = api.ParseBaseURL(f.publicURL); err != nil {
		return Options{}, invalid("public-url", f.publicURL, fmt.Errorf("%w; e.g. https://shop.example.org/api/v1", err))
	}
	if f.metricsAddr != "" {
		if err := checkListenAddr(f.metricsAddr); err != nil {
			return Options{}, invalid("metrics-addr", f.metricsAddr, err)
		}
		opts.MetricsAddr = f.metricsAddr
	}
	if f.redis != "" {
		// Never the value: it may hold a password.
		if opts.Limits.Redis, err = limits.ParseRedis(f.redis); err != nil {
			return Options{}, fmt.Errorf("invalid --ratelimit-redis (or %s): %w", envflag.Name("ratelimit-redis"), err)
		}
	}
	if err := opts.Limits.Check(); err != nil {
		return Options{}, err
	}
	if opts.Server.TrustedProxyHeaders, err = proxytrust.ParseHeaders(f.trustedProxyHeaders); err != nil {
		return Options{}, invalid("trusted-proxy-headers", f.trustedProxyHeaders, err)
	}
	if opts.Server.ProxyAddresses, err = connlimit.ParseAddresses(f.proxyAddresses); err != nil {
		return Options{}, invalid("proxy-addresses", f.proxyAddresses, err)
	}
	for _, bound := range []struct {
		flag string
		n    int
	}{{"max-conns", opts.Server.MaxConns}, {"max-conns-per-address", opts.Server.MaxConnsPerAddress}, {"max-conns-per-network", opts.Server.MaxConnsPerNetwork},
		{"max-realtime-per-network", opts.Server.MaxRealtimePerNetwork}} {
		if bound.n < 0 {
			return Options{}, invalid(bound.flag, strconv.Itoa(bound.n), fmt.Errorf("a bound is positive, or 0 for the default"))
		}
	}
	for _, d := range []struct {
		flag string
		d    time.Duration
	}{
		{"read-header-timeout", opts.Server.ReadHeaderTimeout}, {"idle-timeout", opts.Server.IdleTimeout}, {"body-timeout", opts.Server.BodyTimeout},
		{"shutdown-timeout", opts.Server.ShutdownTimeout}, {"drain-delay", opts.Server.DrainDelay},
		{"slow-request", opts.SlowRequest}, {"audit-retention", opts.AuditRetention}, {"usage-retention", opts.UsageRetention}, {"webhooks-retention", opts.WebhooksRetention},
		{"lock-timeout", f.startup.LockTimeout}, {"quick-check", f.startup.QuickCheck},
	} {
		if d.d < 0 {
			return Options{}, invalid(d.flag, d.d.String(), fmt.Errorf("a duration is 0 or more"))
		}
	}
	opts.HTTPS = f.serve.Lookup("https").Value.String() != ""
	opts.HTTPAddr = f.serve.Lookup("http").Value.String()
	if opts.HTTPAddr == "" {
		opts.HTTPAddr = defaultHTTPAddr
	}
	if serving {
		if err := opts.Settings.Load(); err != nil {
			return Options{}, err
		}
	}
	if opts.Tracing, err = tracing.ConfigFromEnv(os.Getenv); err != nil {
		return Options{}, err
	}
	if opts.Cluster, err = f.cluster.Config(opts.HTTPAddr); err != nil {
		return Options{}, err
	}
	if opts.Cluster.Enabled() && opts.HTTPS {
		return Options{}, fmt.Errorf("--https is not supported in cluster mode: put a TLS proxy in front of the nodes")
	}
	startup := f.startup
	startup.Serving = serving
	startup.Cluster = serving && opts.Cluster.Enabled()
	opts.Startup = &startup
	return opts, nil
}

// checkListenAddr checks an address to listen on: HOST:PORT, the host
// empty for every interface.
func checkListenAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("HOST:PORT, e.g. 127.0.0.1:9090")
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("its port is not a number from 0 to 65535")
	}
	return nil
}

// invalid is the error of a flag's value, naming the flag and its variable.
func invalid(flag, value string, err error) error {
	return fmt.Errorf("invalid --%s (or %s) %q: %w", flag, envflag.Name(flag), value, err)
}
