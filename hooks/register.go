// Package hooks binds petstore to a PocketBase app. It is the composition
// root: Register builds the service's parts when `serve` starts and hands
// them to the /v1 routes (internal/api) and the staff routes
// (internal/staff); it sets the HTTP server's limits, prints the banner,
// stops every part in reverse start order at shutdown, and guards the records that staff
// edit in the dashboard.
package hooks

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"

	"petstore/internal/api"
	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/internal/connlimit"
	"petstore/internal/database"
	"petstore/internal/dataversion"
	"petstore/internal/hiddenfields"
	"petstore/internal/idempotency"
	"petstore/internal/metrics"
	"petstore/internal/pets"
	"petstore/internal/requestlog"
	"petstore/internal/staff"
	"petstore/internal/usage"
	"petstore/internal/webhooks"
	"petstore/limits"
	pbpublic "petstore/pb_public"
)

// Options configure the service. Register keeps the pointer: command-line
// flags fill it in after Register and before `serve` starts.
type Options struct {
	// Banner receives serve's start-up lines (where /v1, /docs/, /staff/ and
	// the dashboard are); nil prints none.
	Banner io.Writer
	HTTPS  bool // serve --https: the banner's addresses are https
	// PublicURL is the base URL clients use, ending in /v1 (serve
	// --public-url); empty when clients reach the server directly.
	PublicURL string
	Limits    limits.Config
	Server    ServerConfig
	// Now is the service's clock for dates it acts on (getPet's sunset);
	// time.Now when nil. Only tests set it.
	Now func() time.Time
	// RequestLog is what /v1 writes to PocketBase's logs; default all.
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
	// link-local, CGNAT or metadata addresses (serve --webhooks-allow-private).
	WebhooksAllowPrivate bool
	// WebhooksRetention is how long webhook attempts, and events delivered
	// or failed, are kept; 0: forever.
	WebhooksRetention time.Duration
	// MetricsAddr is where GET /metrics is served (serve --metrics-addr),
	// on a listener of its own; empty: nowhere.
	MetricsAddr string
	// AllowBackupRestore lets backups be uploaded and restored through
	// PocketBase's API and dashboard (serve --allow-backup-restore).
	AllowBackupRestore bool
	// Startup guards the bootstrap of the app (startup.go); nil binds no
	// guard, for apps bootstrapped before Register.
	Startup *StartupConfig
}

// DefaultSlowRequest is --slow-request's default.
const DefaultSlowRequest = time.Second

// Service is what Register bound; Err tells why serving could not start.
type Service struct {
	log      *slog.Logger // the one logger: console and dashboard
	err      error
	base     api.BaseURL        // Options.PublicURL, checked
	draining atomic.Bool        // from SIGTERM on: /readyz answers 503
	conns    *connlimit.Limiter // the public listener's connections; set when serve starts
	bans     func()             // counts a ban started; nil without metrics
	audits   func(string)       // counts an audit record by action; nil without metrics
	outbox   *webhooks.Outbox
}

// Err is the error that stopped `serve` from starting, if any. PocketBase
// does not turn it into an exit status; main does.
func (s *Service) Err() error { return s.err }

// Register binds everything petstore adds to app.
func Register(app core.App, opts *Options) *Service {
	s := &Service{log: newLogger(app, opts.Console), outbox: webhooks.NewOutbox(app)}
	app.OnServe().Bind(&hook.Handler[*core.ServeEvent]{
		Id: "petstoreServe",
		Func: func(se *core.ServeEvent) error {
			base, err := api.ParseBaseURL(opts.PublicURL)
			if err != nil {
				err = fmt.Errorf("invalid --public-url (or PETSTORE_PUBLIC_URL) %q: %w; e.g. https://shop.example.org/api/v1", opts.PublicURL, err)
			} else {
				s.base = base
				err = serve(se, opts, base, s)
			}
			s.err = err
			return err
		},
	})
	if opts.Startup != nil {
		bindStartup(app, opts.Startup, opts.Console, s)
	}
	bindServer(app, &opts.Server, func() bool { return opts.HTTPS }, s)
	bindBanner(app, opts, s)
	bindPetRecordHooks(app)
	bindAPIKeyRecordHooks(app)
	bindFixedCollections(app)
	hiddenfields.Bind(app)
	bindBackups(app, func() bool { return opts.AllowBackupRestore }, s.log)
	bindAuditRecords(app, s.log, func() time.Duration { return opts.AuditRetention }, func(action audit.Action) {
		if s.audits != nil {
			s.audits(string(action))
		}
	})
	bindWebhookEvents(app, s.outbox)
	app.Cron().MustAdd("petstoreWebhooksPrune", "40 3 * * *", func() {
		if keep := opts.WebhooksRetention; keep > 0 {
			if err := webhooks.Prune(app, keep); err != nil {
				s.log.Error("Could not prune the webhooks' delivery history", "error", err)
			}
		}
	})
	idempotency.BindPurge(app, s.log)
	database.BindDailyOptimize(app, s.log)
	return s
}

// serve builds the service's parts, each stopped at shutdown, and routes
// requests to them; clients reach /v1 at base.
func serve(se *core.ServeEvent, opts *Options, base api.BaseURL, s *Service) error {
	app := se.App
	stops := &stopper{app: app, log: s.log}
	conns, err := newConnLimiter(&opts.Server, len(app.Settings().TrustedProxy.Headers) > 0, s.log)
	if err != nil {
		return err
	}
	s.conns = conns
	var m *metrics.Metrics // nil: no metrics
	if opts.MetricsAddr != "" {
		m = metrics.New()
	}
	history, err := usage.Start(app, 0, s.log)
	if err != nil {
		return err
	}
	stops.onTerminate("petstoreUsageClose", "Could not save the usage history of API keys at shutdown", history.Close)
	limiter, err := limits.New(opts.Limits, keyLedger{app, history, s}, s.log)
	if err != nil {
		return err
	}
	stops.onTerminate("petstoreLimiterClose", "Could not release the rate-limit Redis at shutdown", limiter.Close)

	// The reads every /v1 request makes (its API key, the pets) go to
	// PocketBase's read pool, and are kept at its data version.
	reads, ok := app.ConcurrentDB().(*dbx.DB)
	if !ok {
		return fmt.Errorf("the app's read pool is a %T, not a *dbx.DB", app.ConcurrentDB())
	}
	version, err := dataversion.NewWatch(reads.DB())
	if err != nil {
		return err
	}
	stops.onTerminate("petstoreDataVersionClose", "Could not close the data version watch", version.Close)
	bindRealtimeAuthCheck(app, version, s.log)
	keys, err := apikeys.NewFinder(reads.DB())
	if err != nil {
		return err
	}
	petReads, err := pets.PrepareReads(reads.DB(), api.EncodeJSON)
	if err != nil {
		return err
	}
	checkpointer, err := database.StartCheckpointer(filepath.Join(app.DataDir(), database.DataFile), s.log)
	if err != nil {
		return err
	}
	stops.onTerminate("petstoreCheckpointerStop", "Could not close the checkpointer's connection", checkpointer.Stop)
	events, err := newPetEvents(app, s.log)
	if err != nil {
		return err
	}
	petWriter, err := pets.StartWriter(app)
	if err != nil {
		return err
	}
	petWriter.OnCreated(events.created)
	petWriter.OnInserted(func(tx core.App, rows []pets.Row) error {
		if !s.outbox.Subscribed(webhooks.PetCreated) {
			return nil
		}
		events := make([]webhooks.Event, len(rows))
		for i, row := range rows {
			events[i] = webhooks.Event{Type: webhooks.PetCreated, Data: row.Pet}
		}
		return s.outbox.Write(tx, events...)
	})
	if m != nil {
		petWriter.OnCommitted(m.ObservePetsCommit)
	}
	// Bound before the writer's stop, the outbox closes its statement after it.
	stops.onTerminate("petstoreOutboxClose", "Could not close the webhooks outbox's statement", s.outbox.Close)
	stops.onTerminate("petstorePetWriterStop", "", func() error { petWriter.Stop(); return nil })

	reqlog, err := requestlog.Start(app, requestlog.Config{
		Mode: opts.RequestLog, Console: s.log, AccessLog: opts.AccessLog, SlowRequest: opts.SlowRequest,
	})
	if err != nil {
		return err
	}
	stops.onTerminate("petstoreRequestLogStop", "", func() error { reqlog.Stop(); return nil })

	now := opts.Now
	if now == nil {
		now = time.Now
	}
	var observer api.Observer
	if m != nil {
		if err := startMetrics(app, opts.MetricsAddr, m, reads.DB(), limiter, reqlog, conns, s.log, stops); err != nil {
			return fmt.Errorf("--metrics-addr %s: %w", opts.MetricsAddr, err)
		}
		observer = m
		s.bans = m.ObserveBan
		s.audits = m.ObserveAudit
	}

	// The subscriptions are kept at the data version the /v1 reads watch.
	if err := s.outbox.Watch(version.Version); err != nil {
		return err
	}
	targets := webhooks.Targets{AllowPrivate: opts.WebhooksAllowPrivate}
	var webhookObserver webhooks.Observer
	if m != nil {
		webhookObserver = m
	}
	deliverer, err := webhooks.StartDeliverer(app, s.outbox, webhooks.Config{Targets: targets, Log: s.log, Observer: webhookObserver})
	if err != nil {
		return err
	}
	stops.onTerminate("petstoreWebhooksStop", "", func() error { deliverer.Stop(); return nil })
	dayQuota := &dayQuotaEvents{app: app, outbox: s.outbox, log: s.log}

	documents := api.NewDocuments(base)
	api.AddRoutes(se.Router.Group("/v1"), api.Deps{
		Limiter: limiter, Keys: keys, Version: version, Pets: petReads, PetWriter: petWriter,
		RequestLog: reqlog, Usage: history, Now: now, Base: base, Documents: documents, Logger: s.log, Metrics: observer,
		DayQuotaReached: dayQuota.reached,
	})
	staff.AddRoutes(se.Router, history, staff.Webhooks{Outbox: s.outbox, Targets: targets, Log: s.log})
	// PocketBase's sign-in and account routes, counted per client network.
	se.Router.Bind(newAuthThrottle().handler())
	api.AddHealthRoutes(se.Router, api.Health{Draining: s.draining.Load, DB: reads.DB(), Limiter: limiter})
	// The reference page's copy of the contract, outside /v1 and so not
	// counted: the page renders for visitors whose address is over its
	// keyless limit (behind a shared NAT, everyone's).
	se.Router.GET("/docs/openapi.json", documents.JSON.Serve)
	// Method-less, or it would conflict with the method-less /v1 routes.
	se.Router.Route("", "/{path...}", pbpublic.Handler())

	if err := se.Next(); err != nil {
		return err
	}
	// The handler exists only once the mux is built, in Next.
	se.Server.Handler = api.GuardServer(se.Server.Handler)
	return nil
}

// stopPriority runs the service's stops after PocketBase's graceful
// shutdown (-9999), so that no request is served after them, and before the
// databases close; stopper counts down from it.
const stopPriority = -9000

// stopper binds the stops of the parts serve starts. Each stop runs when the
// app terminates, after PocketBase's graceful shutdown, in reverse order of
// binding, which is the order serve starts the parts: a part stops before
// those it was built on. Each stop runs once, however often the app
// terminates (a restart after a backup restore terminates it before replacing
// the process).
type stopper struct {
	app   core.App
	log   *slog.Logger
	bound int
}

// onTerminate binds stop, logging failure with its error.
func (s *stopper) onTerminate(id, failure string, stop func() error) {
	s.bound++
	var once sync.Once
	s.app.OnTerminate().Bind(&hook.Handler[*core.TerminateEvent]{
		Id:       id,
		Priority: stopPriority - s.bound,
		Func: func(e *core.TerminateEvent) error {
			once.Do(func() {
				if err := stop(); err != nil {
					s.log.Error(failure, "error", err)
				}
			})
			return e.Next()
		},
	})
}
