// Command petstore is the animal store service: PocketBase plus the /v1 pets API.
package main

import (
	"fmt"
	"log"
	"os"

	"github.com/pocketbase/pocketbase"
	"github.com/pocketbase/pocketbase/cmd"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"petstore/hooks"
	"petstore/internal/apikeys"
	"petstore/internal/database"
	"petstore/internal/logging"
	_ "petstore/internal/profiling" // empty unless built with -tags pprof
	"petstore/internal/requestlog"
	"petstore/internal/version"
	"petstore/internal/webhooks"
	"petstore/limits"
	_ "petstore/migrations"
)

func main() {
	// Not pocketbase.New(): under `go run` it turns on dev mode, which prints
	// SQL on stdout, where `keys create` prints the new key.
	app := pocketbase.NewWithConfig(pocketbase.Config{
		DBConnect:        database.Connect,
		DataMaxOpenConns: database.ReadPoolConns,
		DataMaxIdleConns: database.ReadPoolConns,
	})

	// Cobra writes errors to the root command's error stream, which PocketBase
	// leaves on stdout: `keys create` keeps stdout for the key alone, and
	// failures belong on stderr.
	app.RootCmd.SetErr(os.Stderr)

	// The console's flags are read before the others, as PocketBase reads
	// --dir: the logger exists before any command runs.
	logFlags := pflag.NewFlagSet("log", pflag.ContinueOnError)
	logFlags.ParseErrorsAllowlist.UnknownFlags = true
	logFlags.Usage = func() {}
	logFormat := logFlags.String("log-format", logging.Text, "console log format: text, or json (one object a line)")
	logLevel := logFlags.String("log-level", "info", "lowest level logged on the console: debug, info, warn or error")
	_ = logFlags.Parse(os.Args[1:]) // cobra reports bad flags
	app.RootCmd.PersistentFlags().AddFlagSet(logFlags)
	console, err := logging.Console(os.Stderr, *logFormat, *logLevel)
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}

	opts := &hooks.Options{Banner: os.Stdout, Console: console}
	if *logFormat == logging.JSON {
		opts.Banner = nil // the start event carries the addresses
	}
	// PocketBase's own commands, made here rather than by app.Start, so that
	// serve can have flags of petstore's. Without PocketBase's banner, which
	// names only /api/ and /_/: hooks prints a fuller one.
	serve := cmd.NewServeCommand(app, false)
	app.RootCmd.AddCommand(cmd.NewSuperuserCommand(app), serve)
	serve.PersistentFlags().StringVar(&opts.MetricsAddr, "metrics-addr", "",
		"serve Prometheus metrics at GET /metrics on this address (127.0.0.1:9090), a listener of its own; none by default")
	serve.PersistentFlags().StringVar(&opts.PublicURL, "public-url", "",
		"the base URL clients use, ending in /v1, when a reverse proxy is in front (https://shop.example.org/api/v1): Link, Location and the served documents name it (env PETSTORE_PUBLIC_URL)")

	serve.PersistentFlags().BoolVar(&opts.WebhooksAllowPrivate, "webhooks-allow-private", false,
		"let webhook endpoints be loopback, private, link-local, CGNAT or metadata addresses (a receiver on this machine or network)")

	flags := app.RootCmd.PersistentFlags()
	flags.StringVar(&opts.Limits.RedisURL, "ratelimit-redis", "",
		"keep rate-limit counters in this Redis, shared by several instances (redis://HOST:PORT/DB, or Sentinel: redis://SENTINEL:26379/DB?master_name=NAME&addr=SENTINEL2:26379; env PETSTORE_RATELIMIT_REDIS)")
	// Read after the flags, not as the flag's default: --help would print a
	// password in the URL.
	cobra.OnInitialize(func() {
		if opts.Limits.RedisURL == "" {
			opts.Limits.RedisURL = os.Getenv("PETSTORE_RATELIMIT_REDIS")
		}
		if opts.PublicURL == "" {
			opts.PublicURL = os.Getenv("PETSTORE_PUBLIC_URL")
		}
		https, _ := serve.Flags().GetString("https")
		opts.HTTPS = https != ""
	})
	flags.StringVar(&opts.Limits.Prefix, "ratelimit-prefix", limits.DefaultPrefix,
		"prefix of the rate-limit counters, to let several deployments share one Redis")
	flags.Int64Var(&opts.Limits.AnonymousPerMinute, "ratelimit-anonymous", limits.DefaultAnonymousPerMinute,
		"requests per minute without a valid API key, per client network (an IPv4 address, an IPv6 /64)")
	flags.DurationVar(&opts.Server.ReadHeaderTimeout, "read-header-timeout", hooks.DefaultReadHeaderTimeout,
		"close connections whose request headers take longer than this to arrive")
	flags.DurationVar(&opts.Server.ShutdownTimeout, "shutdown-timeout", hooks.DefaultShutdownTimeout,
		"on SIGTERM, how long requests in flight may take to finish")

	var requestLog string
	flags.StringVar(&requestLog, "request-log", string(requestlog.Bounded),
		"which /v1 requests go to PocketBase's logs: bounded (every error, and 100 successes a second with a row counting the rest), all, or errors (4xx and 5xx) only")
	cobra.OnInitialize(func() { opts.RequestLog = requestlog.Mode(requestLog) })

	flags.DurationVar(&opts.AuditRetention, "audit-retention", hooks.DefaultAuditRetention,
		"how long the audit trail of key changes keeps a record (0: forever)")
	flags.DurationVar(&opts.WebhooksRetention, "webhooks-retention", webhooks.DefaultRetention,
		"how long webhook delivery attempts, and events delivered or failed, are kept (0: forever)")
	flags.BoolVar(&opts.AccessLog, "access-log", false, "log one console line per /v1 request")
	flags.DurationVar(&opts.SlowRequest, "slow-request", hooks.DefaultSlowRequest,
		"log /v1 requests that take longer than this as warnings (0: never)")
	flags.DurationVar(&opts.Server.DrainDelay, "drain-delay", 0,
		"on SIGTERM, how long to keep serving while /readyz answers 503, before the listener closes")

	service := hooks.Register(app, opts)
	keys := apikeys.NewCommand(app)
	healthcheck := hooks.NewHealthcheckCommand()
	app.RootCmd.AddCommand(keys.Command, healthcheck.Command, hooks.NewVersionCommand())
	app.RootCmd.Version = version.Read().String()
	app.RootCmd.SetVersionTemplate("{{.Version}}\n")

	if err := app.Execute(); err != nil {
		log.Fatal(err)
	}
	if keys.Err() != nil || service.Err() != nil || healthcheck.Err() != nil {
		os.Exit(1)
	}
}
