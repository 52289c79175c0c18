package hooks

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"petstore/internal/api"
	"petstore/internal/banner"
	"petstore/internal/cluster"
	"petstore/internal/connlimit"
	"petstore/internal/datadir"
	"petstore/internal/envflag"
	"petstore/internal/limits"
	"petstore/internal/pbsettings"
	"petstore/internal/requestlog"
)

// Options configure the service. They are a value, complete before Register:
// main parses and checks every flag and variable into them before the data
// directory is opened, and each part receives its own fields when it is
// built. A new part's options are a field here (a Config of its package,
// when it has several), checked in Check.
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
	// --public-url); empty when clients reach the server directly.
	PublicURL string
	Limits    limits.Config
	Server    ServerConfig
	// Now is the service's clock for dates it acts on (getPet's sunset);
	// time.Now when nil. Only tests set it.
	Now func() time.Time
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
	// WebhooksRetention is how long webhook attempts, and events delivered
	// or failed, are kept; 0: forever.
	WebhooksRetention time.Duration
	// MetricsAddr is where GET /metrics is served (serve --metrics-addr),
	// on a listener of its own; empty: nowhere.
	MetricsAddr string
	// HTTPAddr is serve's --http: where a cluster node listens from its
	// start, before PocketBase does.
	HTTPAddr string
	// Settings are the PocketBase settings the flags declare (backups, S3,
	// SMTP), saved at each start; the dashboard cannot change them.
	Settings pbsettings.Config
	// Cluster is cluster mode's configuration (serve --cluster-etcd and the
	// flags beside it); off when Cluster.Etcd is empty.
	Cluster cluster.Config
	// Startup guards the bootstrap of the app (startup.go); nil binds no
	// guard, for apps bootstrapped before Register.
	Startup *datadir.StartupConfig
}

// DefaultSlowRequest is --slow-request's default.
const DefaultSlowRequest = time.Second

// Check tells whether the options can be served, naming the flag (and its
// variable) of the first value that cannot. It dials nothing: a Redis that
// does not answer is serve's to report.
func (o Options) Check() error {
	if o.Cluster.Enabled() && o.HTTPS {
		return fmt.Errorf("--https is not supported in cluster mode: put a TLS proxy in front of the nodes")
	}
	if err := o.Cluster.Validate(o.HTTPAddr); err != nil {
		return err
	}
	if _, err := api.ParseBaseURL(o.PublicURL); err != nil {
		return invalid("public-url", o.PublicURL, fmt.Errorf("%w; e.g. https://shop.example.org/api/v1", err))
	}
	if err := o.Limits.Check(); err != nil {
		return err
	}
	if o.RequestLog != "" {
		if _, err := requestlog.ParseMode(string(o.RequestLog)); err != nil {
			return invalid("request-log", string(o.RequestLog), err)
		}
	}
	if _, err := connlimit.ParseAddresses(o.Server.ProxyAddresses); err != nil {
		return invalid("proxy-addresses", o.Server.ProxyAddresses, err)
	}
	for flag, n := range map[string]int{"max-conns": o.Server.MaxConns, "max-conns-per-address": o.Server.MaxConnsPerAddress,
		"max-conns-per-network": o.Server.MaxConnsPerNetwork, "max-realtime-per-network": o.Server.MaxRealtimePerNetwork} {
		if n < 0 {
			return invalid(flag, fmt.Sprint(n), fmt.Errorf("a bound is positive, or 0 for the default"))
		}
	}
	for flag, d := range map[string]time.Duration{
		"read-header-timeout": o.Server.ReadHeaderTimeout, "idle-timeout": o.Server.IdleTimeout, "body-timeout": o.Server.BodyTimeout,
		"shutdown-timeout": o.Server.ShutdownTimeout, "drain-delay": o.Server.DrainDelay,
		"slow-request": o.SlowRequest, "audit-retention": o.AuditRetention, "webhooks-retention": o.WebhooksRetention,
	} {
		if d < 0 {
			return invalid(flag, d.String(), fmt.Errorf("a duration is 0 or more"))
		}
	}
	if o.Startup != nil {
		for flag, d := range map[string]time.Duration{"lock-timeout": o.Startup.LockTimeout, "quick-check": o.Startup.QuickCheck} {
			if d < 0 {
				return invalid(flag, d.String(), fmt.Errorf("a duration is 0 or more"))
			}
		}
	}
	return nil
}

// invalid is the error of a flag's value, naming the flag and its variable.
func invalid(flag, value string, err error) error {
	return fmt.Errorf("invalid --%s (or %s) %q: %w", flag, envflag.Name(flag), value, err)
}
