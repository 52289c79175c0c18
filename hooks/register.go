// Package hooks binds petstore to a PocketBase app. It is the composition
// root: Register takes the parsed options (internal/options) and binds the
// service; when `serve` starts, the parts of one list (parts.go) start in
// its order and are handed to the /v1 routes (internal/api) and the staff
// routes (internal/staff), and at shutdown they stop in reverse
// (lifecycle.go). It also sets the HTTP server's limits, prints the banner,
// and guards the records that staff edit in the dashboard.
package hooks

import (
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"

	"petstore/internal/api"
	"petstore/internal/apikeys"
	"petstore/internal/atrest"
	"petstore/internal/audit"
	"petstore/internal/authlimit"
	"petstore/internal/backup"
	"petstore/internal/categories"
	"petstore/internal/cluster"
	"petstore/internal/clustergate"
	"petstore/internal/connlimit"
	"petstore/internal/customers"
	"petstore/internal/database"
	"petstore/internal/datadir"
	"petstore/internal/fixedcollections"
	"petstore/internal/guestlimit"
	"petstore/internal/hiddenfields"
	"petstore/internal/idempotency"
	"petstore/internal/logging"
	"petstore/internal/metrics"
	"petstore/internal/options"
	"petstore/internal/pets"
	"petstore/internal/proxytrust"
	"petstore/internal/realtime"
	"petstore/internal/realtimeauth"
	"petstore/internal/requestid"
	"petstore/internal/staff"
	"petstore/internal/tracing"
	"petstore/internal/usage"
	"petstore/internal/webhooks"
	"petstore/internal/writegate"
	pbpublic "petstore/pb_public"
)

// Service is what Register bound; Err tells why serving could not start.
type Service struct {
	log      *slog.Logger // the one logger: console and dashboard
	err      error
	draining atomic.Bool        // from SIGTERM on: /readyz answers 503
	conns    *connlimit.Limiter // the public listener's connections; set when serve starts
	bans     func()             // counts a ban started; nil without metrics
	audits   func(string)       // counts an audit record by action; nil without metrics
	outbox   *webhooks.Outbox
	held     *datadir.HeldUse // the data directory's use lock; nil in tests that bind no startup
	// In cluster mode, the node, its gate, and the listener it hands
	// PocketBase once elected; nil otherwise.
	cluster  *cluster.Process
	gate     http.Handler
	listener net.Listener
}

// Err is the error that stopped `serve` from starting, if any.
func (s *Service) Err() error { return s.err }

// TakeDataDir makes this process the data directory's only user, for a
// command that changes what another would hold in memory (the key of the
// secrets at rest): datadir.ErrInUse while another process has it open.
// Held until the process ends.
func (s *Service) TakeDataDir() error { return s.held.Exclusive() }

// FixedCollections are the collections the service relies on as their
// migrations make them: no API changes them (fixedcollections), and no
// restore brings them changed (backup).
func FixedCollections() []fixedcollections.Collection {
	fixed := append(apikeys.Fixed(), audit.Fixed(), pets.Fixed(), categories.Fixed(), customers.Fixed())
	return append(append(fixed, webhooks.Fixed()...), usage.Fixed()...)
}

// Register binds everything petstore adds to app, configured by opts.
func Register(app core.App, opts options.Options) *Service {
	s := &Service{log: logging.New(app, opts.Console), outbox: webhooks.NewOutbox(app)}
	parts := &serviceParts{app: app, opts: opts, s: s, writes: writegate.Fenced(opts.MayWrite)}
	if opts.MetricsAddr != "" {
		actions := make([]string, len(audit.Actions))
		for i, a := range audit.Actions {
			actions[i] = string(a)
		}
		parts.metrics = metrics.New(metrics.Known{
			Plans:               []string{api.AnonymousPlan},
			RateLimitOutcomes:   api.RateLimitOutcomes,
			IdempotencyOutcomes: api.IdempotencyOutcomes,
			WebhookOutcomes:     webhooks.Outcomes,
			AuditActions:        actions,
		})
		s.bans = parts.metrics.ObserveBan
		s.audits = parts.metrics.ObserveAudit
	}
	life := bindLifecycle(app, s.log, parts.list())
	app.OnServe().Bind(&hook.Handler[*core.ServeEvent]{
		Id: "petstoreServe",
		Func: func(se *core.ServeEvent) error {
			s.err = serve(se, opts, parts, life)
			return s.err
		},
	})
	var held *datadir.HeldUse
	if opts.Startup != nil {
		held = datadir.BindStartup(app, *opts.Startup, opts.Console, s.log, life.startEarly)
		bindStop(app, releaseStepId, s.log, func(e *core.TerminateEvent) error {
			held.Release()
			return e.Next()
		})
	}
	atrest.Bind(app)
	bindServer(app, opts.Server, opts.HTTPS, s)
	bindBanner(app, opts, s)
	realtime.Bind(app, opts.Server.MaxRealtimePerNetwork)
	pets.Bind(app)
	categories.Bind(app)
	apikeys.Bind(app)
	customers.Bind(app)
	usage.Bind(app)
	fixed := FixedCollections()
	fixedcollections.Bind(app, fixed...)
	hiddenfields.Bind(app)
	s.held = held
	backup.Bind(app, opts.AllowBackupRestore, fixed, held, s.log)
	opts.Settings.Guard(app)
	proxytrust.GuardHeaders(app, opts.Server.TrustedProxyHeaders)
	audit.Bind(app, s.log, opts.AuditRetention, func(action audit.Action) {
		if s.audits != nil {
			s.audits(string(action))
		}
	})
	webhooks.Bind(app, s.outbox, opts.WebhooksRetention, s.log)
	idempotency.BindPurge(app, s.log)
	database.BindDailyOptimize(app, s.log)
	return s
}

// serve starts the parts not started yet and routes requests to them.
func serve(se *core.ServeEvent, opts options.Options, p *serviceParts, life *lifecycle) error {
	if err := life.startAll(); err != nil {
		return err
	}
	app, s := se.App, p.s
	// Every part has registered its scheduled jobs by now.
	p.writes.Cron(app.Cron(), s.log)
	realtimeauth.Bind(app, p.version, s.log)
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	var observer api.Observer
	if p.metrics != nil {
		observer = p.metrics
	}
	targets := webhooks.Targets{AllowPrivate: opts.WebhooksAllowPrivate}
	documents := api.NewDocuments(opts.PublicURL)
	// With proxies named, their client-address headers are believed from
	// them alone; without, from any peer, as PocketBase does (the start
	// warns). A request's id is taken from the named proxies alone.
	proxies := proxytrust.Proxies(opts.Server.ProxyAddresses)
	if len(proxies) > 0 {
		se.Router.Bind(proxies.Middleware())
	}
	se.Router.Bind(requestid.Middleware(proxies.Has))
	if tracing.On() {
		se.Router.Bind(api.TraceRequests())
	}
	// Outside /v1, the bounded request log takes PocketBase's activity
	// logger's place, and guests are limited per client network; /v1 logs
	// and limits its own.
	se.Router.Bind(p.reqlog.SiteMiddleware(), guestlimit.Middleware(p.limiter))
	if observer != nil {
		se.Router.Bind(api.ObserveSite(observer))
	}
	v1 := se.Router.Group("/v1")
	v1.Unbind(guestlimit.MiddlewareID)
	api.AddRoutes(v1, api.Deps{
		Limiter: p.limiter, Keys: p.keys, LastUse: apikeys.NewLastUse(app, p.writes, s.log), Version: p.version, Pets: p.petReads, PetWriter: p.petWriter, Categories: p.categoryReads,
		RequestLog: p.reqlog, Usage: p.history, Now: now, Base: opts.PublicURL, Documents: documents, Logger: s.log, Metrics: observer,
		DayQuotaReached: webhooks.DayQuotaReached(app, s.outbox, p.writes, s.log), Thresholds: p.crossings,
	})
	var nodes staff.ClusterView
	if s.cluster != nil {
		nodes = s.cluster.Node.View
	}
	staff.AddRoutes(se.Router, p.history, staff.Webhooks{Outbox: s.outbox, Targets: targets}, nodes)
	// PocketBase's sign-in and account routes, counted per client network.
	se.Router.Bind(authlimit.Middleware())
	health := api.Health{Draining: s.draining.Load, DB: p.reads, Limiter: p.limiter}
	if s.cluster != nil {
		health.Cluster = clustergate.Health(s.cluster)
		// The usage counted in memory ships with the last transactions.
		clustergate.Bind(se, s.cluster, s.gate, stepOf(handoverStepId).priority, p.history.Flush, s.log)
	}
	api.AddHealthRoutes(se.Router, health)
	// The reference page's copy of the contract, outside /v1 and so not
	// counted: the page renders for visitors whose address is over its
	// keyless limit (behind a shared NAT, everyone's).
	se.Router.GET("/docs/openapi.json", documents.Reference.Serve)
	// Method-less, or it would conflict with the method-less /v1 routes.
	se.Router.Route("", "/{path...}", pbpublic.Handler())

	if err := se.Next(); err != nil {
		return err
	}
	// The handler exists only once the mux is built, in Next.
	guarded(se.Server, opts.Server, api.GuardServer(se.Server.Handler))
	if s.cluster != nil {
		clustergate.Promoted(s.cluster, app, p.clusterTerm, s.log)
	}
	return nil
}
