// Package options holds what the service is configured with, as values:
// Bind declares every flag petstore adds, and Flags.Parse reads them (and
// their PETSTORE_* variables) once into Options, whose fields are typed
// (URLs, durations, addresses, networks, the Redis and the replica) and
// checked. Each value has one parser, run before anything touches the data
// directory; the parts receive the values and never parse them again.
package options

import (
	"io"
	"log/slog"
	"net/netip"
	"time"

	"petstore/internal/api"
	"petstore/internal/banner"
	"petstore/internal/cluster"
	"petstore/internal/datadir"
	"petstore/internal/limits"
	"petstore/internal/pbsettings"
	"petstore/internal/requestlog"
	"petstore/internal/tracing"
)

// Options configure the service. They are a value, complete before the
// service is bound: Flags.Parse makes them of the command line, and tests
// of their own fields. A new part's options are a field here (a Config of
// its package, when it has several), parsed in Flags.Parse.
type Options struct {
	// Banner receives serve's start-up lines (where /v1, /docs/, /staff/ and
	// the dashboard are); nil prints none.
	Banner io.Writer
	// Installer receives serve's first-start hint while there is no
	// superuser: the installer link and the command that creates one, run
	// as Self; nil leaves PocketBase's own.
	Installer io.Writer
	Self      banner.Invocation
	HTTPS     bool // serve --https: the banner's addresses are https
	// PublicURL is the base URL clients use, ending in /v1 (serve
	// --public-url); its zero value when clients reach the server directly.
	PublicURL api.BaseURL
	Limits    limits.Config
	Server    Server
	// SteppedDown is called once a cluster node has stepped down after it
	// won (cluster.ErrSteppedDown): main replaces the process; nil: nothing
	// is called.
	SteppedDown func()
	// Now is the service's clock for dates it acts on (getPet's sunset);
	// time.Now when nil. Only tests set it.
	Now func() time.Time
	// MayWrite says whether a server that is no cluster node may write
	// now, for its background writers (internal/writegate); nil: always.
	// Only tests set it: a cluster node's is its fence.
	MayWrite func() bool
	// RequestLog is what /v1 writes to PocketBase's logs; empty: bounded.
	RequestLog requestlog.Mode
	// Console receives the service's events beside the dashboard's logs
	// (stderr, in the format of --log-format); nil: the dashboard only.
	Console slog.Handler
	// AccessLog logs one console line per /v1 request (--access-log).
	AccessLog bool
	// SlowRequest is the duration over which a /v1 request is logged as a
	// warning; 0 logs none.
	SlowRequest time.Duration
	// AuditRetention is how long the audit trail keeps a record; 0: forever.
	AuditRetention time.Duration
	// WebhooksAllowPrivate lets webhook endpoints be loopback, private,
	// link-local, CGNAT, metadata, documentation or reserved addresses, or this
	// host's own (serve --webhooks-allow-private).
	WebhooksAllowPrivate bool
	// AllowBackupRestore lets backups be uploaded and restored through
	// PocketBase's API and dashboard (serve --allow-backup-restore).
	AllowBackupRestore bool
	// UsageRetention is how long the usage history keeps an hour; 0:
	// forever.
	UsageRetention time.Duration
	// WebhooksRetention is how long webhook attempts, and events delivered
	// or failed, are kept; 0: forever.
	WebhooksRetention time.Duration
	// MetricsAddr is where GET /metrics is served (serve --metrics-addr,
	// HOST:PORT), on a listener of its own; empty: nowhere.
	MetricsAddr string
	// HTTPAddr is serve's --http: where a cluster node listens from its
	// start, before PocketBase does.
	HTTPAddr string
	// Settings are the PocketBase settings the flags declare (backups, S3,
	// SMTP), saved at each start; the dashboard cannot change them.
	Settings pbsettings.Config
	// Cluster is cluster mode's configuration (serve --cluster-etcd and the
	// flags beside it); its zero value is cluster mode off.
	Cluster cluster.Config
	// Tracing is what the OTEL_* variables ask of OpenTelemetry's tracing;
	// its zero value is tracing off.
	Tracing tracing.Config
	// Startup guards the bootstrap of the app (datadir.BindStartup); nil
	// binds no guard, for apps bootstrapped before they are bound.
	Startup *datadir.StartupConfig
}

// Server sets the HTTP server limits PocketBase leaves open-ended; a zero
// duration is its default.
type Server struct {
	// ReadHeaderTimeout closes connections whose request headers have not all
	// arrived in time (slowloris). PocketBase's own is 1 minute.
	ReadHeaderTimeout time.Duration
	// BodyTimeout is how long a request's body may take to arrive after its
	// headers (connlimit.BodyDeadline).
	BodyTimeout time.Duration
	// ShutdownTimeout is how long SIGTERM lets in-flight requests finish.
	// PocketBase's own is 1 second.
	ShutdownTimeout time.Duration
	// DrainDelay is how long, after SIGTERM, the server keeps serving while
	// /readyz answers 503, so that a load balancer stops sending new
	// requests before the listener closes. Zero closes it at once.
	DrainDelay time.Duration
	// IdleTimeout closes a keep-alive connection that has waited this long
	// for its next request. PocketBase sets none, and Go then waits the
	// read timeout, 5 minutes.
	IdleTimeout time.Duration
	// MaxConnsPerAddress bounds the connections one client network (an
	// IPv4 address, an IPv6 /64) holds open on the public listener;
	// ProxyAddresses are not bound by it.
	MaxConnsPerAddress int
	// MaxConnsPerNetwork bounds the connections the clients of one wider
	// network (an IPv4 /24, an IPv6 /48) hold open together on the public
	// listener; 0: an eighth of MaxConns (connlimit.DefaultPerNetwork).
	// ProxyAddresses are not bound by it.
	MaxConnsPerNetwork int
	// MaxRealtimePerNetwork bounds the realtime streams (/api/realtime)
	// the clients of one wider network hold open together; 0:
	// realtime.DefaultPerNetwork.
	MaxRealtimePerNetwork int
	// TrustedProxyHeaders, when any, replace PocketBase's trusted client
	// address headers (Settings, Application, User IP proxy headers) at
	// each start: X-Forwarded-For.
	TrustedProxyHeaders []string
	// ProxyAddresses are the reverse proxies' own addresses and networks:
	// every client's connection comes from them.
	ProxyAddresses []netip.Prefix
	// MaxConns bounds the connections open on the public listener in all;
	// 0 derives it from the process's descriptor limit
	// (connlimit.DefaultGlobal).
	MaxConns int
}

// Defaults of Server, and of --slow-request.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultBodyTimeout lets a body of 64 KiB (/v1's bound) arrive at 1 KiB
	// a second, and a dashboard's upload of megabytes at a slow link's pace.
	DefaultBodyTimeout     = time.Minute
	DefaultShutdownTimeout = 10 * time.Second
	// DefaultIdleTimeout outlasts the upstream idle timeouts of the usual
	// proxies and load balancers (nginx's keepalive_timeout and AWS ALB's,
	// 60 s), so that the proxy, not the server, closes an idle connection
	// and never sends a request on one the server is closing; and it is
	// short enough that an idle connection frees its descriptor within
	// about a minute.
	DefaultIdleTimeout = 75 * time.Second
	DefaultSlowRequest = time.Second
)
