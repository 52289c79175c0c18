// Command petstore is the animal store service: PocketBase plus the /v1 pets API.
package main

import (
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pocketbase/pocketbase"
	"github.com/pocketbase/pocketbase/cmd"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"petstore/hooks"
	"petstore/internal/apikeys"
	"petstore/internal/database"
	"petstore/internal/datadir"
	"petstore/internal/envflag"
	"petstore/internal/logging"
	_ "petstore/internal/profiling" // empty unless built with -tags pprof
	"petstore/internal/requestlog"
	"petstore/internal/version"
	"petstore/internal/webhooks"
	"petstore/limits"
	_ "petstore/migrations"
)

func main() {
	// Before anything is created: the data directory and every file in it
	// are the owner's alone, whatever umask the process was started with.
	datadir.RestrictUmask()

	// Not pocketbase.New(): under `go run` it turns on dev mode, which prints
	// SQL on stdout, where `keys create` prints the new key.
	config := pocketbase.Config{
		DBConnect:        database.Connect,
		DataMaxOpenConns: database.ReadPoolConns,
		DataMaxIdleConns: database.ReadPoolConns,
	}
	// PocketBase reads its global flags when the app is made, before the
	// commands run: their variables become its defaults.
	if err := pocketBaseEnv(&config); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
	if dir, ok := dirArgument(os.Args[1:]); ok {
		config.DefaultDataDir = dir
	}
	app := pocketbase.NewWithConfig(config)

	// Cobra writes errors to the root command's error stream, which PocketBase
	// leaves on stdout: `keys create` keeps stdout for the key alone, and
	// failures belong on stderr.
	app.RootCmd.SetErr(os.Stderr)

	// The flags needed before the bootstrap (the console's, and those of the
	// start that opens the data directory) are read before the others, as
	// PocketBase reads --dir: the logger exists before any command runs.
	early := pflag.NewFlagSet("early", pflag.ContinueOnError)
	early.ParseErrorsAllowlist.UnknownFlags = true
	early.Usage = func() {}
	logFormat := early.String("log-format", logging.Text, "console log format: text, or json (one object a line)")
	logLevel := early.String("log-level", "info", "lowest level logged on the console: debug, info, warn or error")
	startup := &hooks.StartupConfig{}
	early.DurationVar(&startup.LockTimeout, "lock-timeout", hooks.DefaultLockTimeout,
		"how long a start waits for another process's start on the same data directory (which holds the start lock while it applies migrations)")
	early.DurationVar(&startup.QuickCheck, "quick-check", hooks.DefaultQuickCheck,
		"serve: how long PRAGMA quick_check of data.db may take at start (a damaged database is refused); 0 skips the check")
	_ = early.Parse(os.Args[1:]) // cobra reports bad flags
	if err := envflag.Apply(early); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
	for _, name := range []string{"log-format", "log-level", "lock-timeout"} {
		app.RootCmd.PersistentFlags().AddFlag(early.Lookup(name))
	}
	console, err := logging.Console(os.Stderr, *logFormat, *logLevel)
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}

	opts := &hooks.Options{Banner: os.Stdout, Console: console, Startup: startup}
	if *logFormat == logging.JSON {
		opts.Banner = nil // the start event carries the addresses
	}
	// PocketBase's own commands, made here rather than by app.Start, so that
	// serve can have flags of petstore's. Without PocketBase's banner, which
	// names only /api/ and /_/: hooks prints a fuller one.
	serve := cmd.NewServeCommand(app, false)
	app.RootCmd.AddCommand(cmd.NewSuperuserCommand(app), serve)
	serve.PersistentFlags().AddFlag(early.Lookup("quick-check"))
	serve.PersistentFlags().StringVar(&opts.MetricsAddr, "metrics-addr", "",
		"serve Prometheus metrics at GET /metrics on this address (127.0.0.1:9090), a listener of its own; none by default")
	serve.PersistentFlags().StringVar(&opts.PublicURL, "public-url", "",
		"the base URL clients use, ending in /v1, when a reverse proxy is in front (https://shop.example.org/api/v1): Link, Location and the served documents name it")

	serve.PersistentFlags().BoolVar(&opts.WebhooksAllowPrivate, "webhooks-allow-private", false,
		"let webhook endpoints be loopback, private, link-local, CGNAT or metadata addresses (a receiver on this machine or network)")
	serve.PersistentFlags().BoolVar(&opts.AllowBackupRestore, "allow-backup-restore", false,
		"let backups be uploaded and restored through the dashboard and PocketBase's API (a restore replaces every key, plan and pet; the audit trail is carried across)")

	flags := app.RootCmd.PersistentFlags()
	flags.StringVar(&opts.Limits.RedisURL, "ratelimit-redis", "",
		"keep rate-limit counters in this Redis, shared by several instances (redis://HOST:PORT/DB; Sentinel: redis://SENTINEL:26379/DB?master_name=NAME&addr=SENTINEL2:26379; Redis Cluster: redis+cluster://NODE:6379?addr=NODE2:6379; rediss:// and rediss+cluster:// with TLS, tls_ca_file=PEM for a CA of your own)")
	flags.StringVar(&opts.Limits.Prefix, "ratelimit-prefix", limits.DefaultPrefix,
		"prefix of the rate-limit counters, to let several deployments share one Redis")
	flags.Int64Var(&opts.Limits.AnonymousPerMinute, "ratelimit-anonymous", limits.DefaultAnonymousPerMinute,
		"requests per minute without a valid API key, per client network (an IPv4 address, an IPv6 /64)")
	flags.DurationVar(&opts.Server.ReadHeaderTimeout, "read-header-timeout", hooks.DefaultReadHeaderTimeout,
		"close connections whose request headers take longer than this to arrive")
	flags.DurationVar(&opts.Server.IdleTimeout, "idle-timeout", hooks.DefaultIdleTimeout,
		"close keep-alive connections that wait longer than this for their next request")
	flags.IntVar(&opts.Server.MaxConnsPerAddress, "max-conns-per-address", hooks.DefaultMaxConnsPerAddress,
		"connections one client network (an IPv4 address, an IPv6 /64) may hold open; more are closed at once")
	flags.StringVar(&opts.Server.ProxyAddresses, "proxy-addresses", "",
		"the reverse proxies' addresses or networks, comma-separated (127.0.0.1,10.0.0.0/8): --max-conns-per-address does not bound them")
	flags.IntVar(&opts.Server.MaxConns, "max-conns", 0,
		"connections open in all; more are closed at once (0: 3/4 of the open files limit, at most 10000)")
	flags.DurationVar(&opts.Server.ShutdownTimeout, "shutdown-timeout", hooks.DefaultShutdownTimeout,
		"on SIGTERM, how long requests in flight may take to finish")

	var requestLog string
	flags.StringVar(&requestLog, "request-log", string(requestlog.Bounded),
		"which /v1 requests go to PocketBase's logs: bounded (every error, and 100 successes a second with a row counting the rest), all, or errors (4xx and 5xx) only")
	cobra.OnInitialize(func() { opts.RequestLog = requestlog.Mode(requestLog) })

	flags.DurationVar(&opts.AuditRetention, "audit-retention", hooks.DefaultAuditRetention,
		"how long the audit trail of key and webhook endpoint changes keeps a record (0: forever)")
	flags.DurationVar(&opts.WebhooksRetention, "webhooks-retention", webhooks.DefaultRetention,
		"how long webhook delivery attempts, and events delivered or failed, are kept (0: forever)")
	flags.BoolVar(&opts.AccessLog, "access-log", false, "log one console line per /v1 request")
	flags.DurationVar(&opts.SlowRequest, "slow-request", hooks.DefaultSlowRequest,
		"log /v1 requests that take longer than this as warnings (0: never)")
	flags.DurationVar(&opts.Server.DrainDelay, "drain-delay", 0,
		"on SIGTERM, how long to keep serving while /readyz answers 503, before the listener closes")

	// Every flag of the service has a variable, read once cobra has parsed
	// the command line (the flag wins); those read earlier are skipped. The
	// value is set, not the default: --help never prints a Redis password.
	envflag.Document(flags, "help", "version")
	envflag.Document(serve.PersistentFlags())
	cobra.OnInitialize(func() {
		for _, fs := range []*pflag.FlagSet{flags, serve.PersistentFlags()} {
			if err := envflag.Apply(fs, "help", "version", "dir", "dev", "encryptionEnv", "queryTimeout",
				"log-format", "log-level", "lock-timeout", "quick-check"); err != nil {
				fmt.Fprintln(os.Stderr, "Error:", err)
				os.Exit(1)
			}
		}
		https, _ := serve.Flags().GetString("https")
		opts.HTTPS = https != ""
	})

	service := hooks.Register(app, opts)
	keys := apikeys.NewCommand(app)
	healthcheck := hooks.NewHealthcheckCommand()
	versionCmd := hooks.NewVersionCommand()
	app.RootCmd.AddCommand(keys.Command, healthcheck.Command, versionCmd)
	app.RootCmd.Version = version.Read().String()
	app.RootCmd.SetVersionTemplate("{{.Version}}\n")

	command, _, _ := app.RootCmd.Find(os.Args[1:])
	startup.Serving = command == serve
	if command == healthcheck.Command || command == versionCmd {
		// Neither reads the data directory: they run without the
		// bootstrap, so that a start in progress (which holds the start
		// lock) or data from a newer version cannot hold them up.
		_ = app.RootCmd.Execute()
	} else if err := app.Execute(); err != nil {
		log.Fatal(err)
	}
	if keys.Err() != nil || service.Err() != nil || healthcheck.Err() != nil {
		os.Exit(1)
	}
}

// dirArgument is the command line's --dir. PocketBase reads --dir when the
// app is made, with a parse that stops at the first argument it cannot read,
// such as the negative duration of `keys roll ID --grace -1h --dir X`: the
// command would then open ./pb_data, not X. The last --dir wins, as in a
// full parse; "--" ends the flags.
func dirArgument(args []string) (string, bool) {
	dir, found := "", false
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			return dir, found
		case a == "--dir" && i+1 < len(args):
			dir, found = args[i+1], true
			i++
		case strings.HasPrefix(a, "--dir="):
			dir, found = strings.TrimPrefix(a, "--dir="), true
		}
	}
	return dir, found
}

// pocketBaseEnv sets config's defaults of PocketBase's global flags (--dir,
// --dev, --encryptionEnv, --queryTimeout) from their variables.
func pocketBaseEnv(config *pocketbase.Config) error {
	if v, ok := os.LookupEnv(envflag.Name("dir")); ok {
		config.DefaultDataDir = v
	}
	if v, ok := os.LookupEnv(envflag.Name("dev")); ok {
		dev, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("invalid %s %q (for --dev): true or false", envflag.Name("dev"), v)
		}
		config.DefaultDev = dev
	}
	if v, ok := os.LookupEnv(envflag.Name("encryptionEnv")); ok {
		config.DefaultEncryptionEnv = v
	}
	if v, ok := os.LookupEnv(envflag.Name("queryTimeout")); ok {
		seconds, err := strconv.Atoi(v)
		if err != nil || seconds <= 0 {
			return fmt.Errorf("invalid %s %q (for --queryTimeout): a number of seconds", envflag.Name("queryTimeout"), v)
		}
		config.DefaultQueryTimeout = time.Duration(seconds) * time.Second
	}
	return nil
}
