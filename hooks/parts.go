package hooks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/api"
	"petstore/internal/apikeys"
	"petstore/internal/atrest"
	"petstore/internal/categories"
	"petstore/internal/clustergate"
	"petstore/internal/connlimit"
	"petstore/internal/database"
	"petstore/internal/dataversion"
	"petstore/internal/limits"
	"petstore/internal/metrics"
	"petstore/internal/options"
	"petstore/internal/pets"
	"petstore/internal/proxytrust"
	"petstore/internal/requestlog"
	"petstore/internal/tracing"
	"petstore/internal/usage"
	"petstore/internal/version"
	"petstore/internal/webhooks"
	"petstore/internal/writegate"
)

// serviceParts are the parts serve runs, and what each made for the parts
// after it and for the routes.
type serviceParts struct {
	app  core.App
	opts options.Options
	s    *Service

	metrics   *metrics.Metrics // nil: no --metrics-addr
	reads     *sql.DB          // PocketBase's read pool
	history   *usage.Recorder
	crossings *usage.Thresholds // tells of keys past 80 and 100 % of their day quota
	limiter   *limits.Limiter
	version   *dataversion.Watch
	keys      *apikeys.Finder
	petReads  *pets.Reads
	petWriter *pets.Writer
	reqlog    *requestlog.Logger

	categoryReads *categories.Reads // /v1's list of categories

	clusterTerm int64 // the term this node leads, in cluster mode
	// writes is whether this node may write now, which every background
	// writer follows (internal/writegate): a cluster node's fence, from
	// its start.
	writes writegate.Gate
}

// list is the one list of the parts, in the order they start; they stop in
// reverse, after the server has stopped serving, each before the parts it
// was built on. A new part is one entry at its place in the list, with its
// start below: before the parts that use it, after those it uses. A part
// that must run before PocketBase's bootstrap opens the database (a cluster
// node deciding whether this process may write) is early and comes first.
func (p *serviceParts) list() []part {
	return []part{
		{name: "tracing", early: true, start: p.startTracing},
		{name: "cluster node", early: true, start: p.startCluster},
		{name: "declared settings", start: p.startSettings},
		{name: "secrets at rest", start: p.startSecrets},
		{name: "connection bounds", start: p.startConnLimits},
		{name: "usage history", start: p.startUsage},
		{name: "rate limiter", start: p.startLimiter},
		{name: "data version watch", start: p.startReads},
		{name: "checkpointer", start: p.startCheckpointer},
		{name: "webhooks outbox", start: p.startOutbox},
		{name: "usage thresholds", start: p.startThresholds},
		{name: "pets writer", start: p.startPetWriter},
		{name: "request log", start: p.startRequestLog},
		{name: "metrics listener", start: p.startMetrics},
		{name: "webhooks deliverer", start: p.startDeliverer},
	}
}

// startTracing exports spans as the OTEL_* variables say, from the first
// part on (a cluster node's forwards), and flushes them after the last
// part has stopped.
func (p *serviceParts) startTracing() (func() error, error) {
	t, err := tracing.Begin(context.Background(), p.opts.Tracing, version.Read().Version)
	if err != nil {
		return nil, err
	}
	return t.Close, nil
}

// startConnLimits applies the declared proxy headers, then makes the public
// listener's connection bounds, which depend on them, unless a cluster
// node's gate serves behind them already.
func (p *serviceParts) startConnLimits() (func() error, error) {
	cfg := p.opts.Server
	if err := proxytrust.ApplyHeaders(p.app, cfg.TrustedProxyHeaders, cfg.ProxyAddresses, p.s.log); err != nil {
		return nil, err
	}
	return nil, p.connLimiter(p.s.log)
}

// connLimiter makes the public listener's connection bounds, once, logging
// them to log, and serves their figures with the metrics. A cluster node
// makes them before it listens: its gate serves behind them while it
// follows, and PocketBase once it leads.
func (p *serviceParts) connLimiter(log *slog.Logger) error {
	if p.s.conns != nil {
		return nil
	}
	cfg := p.opts.Server
	bounds := connlimit.Config{Global: cfg.MaxConns, PerAddress: cfg.MaxConnsPerAddress, PerNetwork: cfg.MaxConnsPerNetwork, Exempt: cfg.ProxyAddresses}
	proxied := len(cfg.TrustedProxyHeaders) > 0 || len(p.app.Settings().TrustedProxy.Headers) > 0
	conns, err := connlimit.NewPublic(bounds, proxied, orDefault(cfg.IdleTimeout, options.DefaultIdleTimeout), log)
	if err != nil {
		return err
	}
	p.s.conns = conns
	if p.metrics != nil {
		p.metrics.Register(metrics.Conns(conns)...)
	}
	return nil
}

// startSettings saves the PocketBase settings the flags declare.
func (p *serviceParts) startSettings() (func() error, error) {
	return nil, p.opts.Settings.Apply(p.app, p.s.log)
}

func (p *serviceParts) startUsage() (func() error, error) {
	history, err := usage.Start(p.app, usage.Config{Retention: p.opts.UsageRetention, Gate: p.writes}, p.s.log)
	if err != nil {
		return nil, err
	}
	p.history = history
	return history.Close, nil
}

// startThresholds starts telling of day quotas crossed; its audit records
// are usage.threshold events through the outbox, in their transactions.
func (p *serviceParts) startThresholds() (func() error, error) {
	var counted func(plan string, percent int64)
	if p.metrics != nil {
		counted = p.metrics.ObserveUsageThreshold
	}
	p.crossings = usage.StartThresholds(p.app, p.s.log, counted, p.writes)
	return p.crossings.Close, nil
}

func (p *serviceParts) startLimiter() (func() error, error) {
	limiter, err := limits.New(p.opts.Limits, apikeys.Ledger{App: p.app, History: p.history, Banned: p.s.bans}, p.s.log)
	if err != nil {
		return nil, err
	}
	p.limiter = limiter
	return limiter.Close, nil
}

// startReads prepares the reads every /v1 request makes (its API key, the
// pets, the categories) on PocketBase's read pool, kept at the pool's data version.
func (p *serviceParts) startReads() (func() error, error) {
	reads, ok := p.app.ConcurrentDB().(*dbx.DB)
	if !ok {
		return nil, fmt.Errorf("the app's read pool is a %T, not a *dbx.DB", p.app.ConcurrentDB())
	}
	p.reads = reads.DB()
	version, err := dataversion.NewWatch(p.reads)
	if err != nil {
		return nil, err
	}
	p.version = version
	if err := version.HeaderErr(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		p.s.log.Warn("Data version: SQLite's WAL index header is not read, so every /v1 request reads the data version", "error", err)
	}
	if p.keys, err = apikeys.NewFinder(p.reads); err == nil {
		p.petReads, err = pets.PrepareReads(p.reads, api.EncodeJSON)
	}
	if err == nil {
		p.categoryReads, err = categories.PrepareReads(p.reads, api.EncodeJSON)
	}
	if err != nil {
		version.Close()
		return nil, err
	}
	return version.Close, nil
}

// startCheckpointer checkpoints data.db's WAL away from its writer, except
// on a cluster's leader: there Litestream checkpoints (replica.Replicator),
// and the read transaction it holds between its checkpoints keeps any other
// connection from copying a page, so each of ours would only sort the WAL's
// frames to find that out.
func (p *serviceParts) startCheckpointer() (func() error, error) {
	if p.s.cluster != nil {
		return nil, nil
	}
	checkpointer, err := database.StartCheckpointer(filepath.Join(p.app.DataDir(), database.DataFile), p.s.log)
	if err != nil {
		return nil, err
	}
	return checkpointer.Stop, nil
}

// startSecrets seals, with the key --encryptionEnv names, the webhook
// secrets stored in plaintext, once (webhooks.SealSecrets), and refuses to
// serve with secrets the key does not open. Without a key it warns at each
// start while a secret is kept in plaintext, as the metric
// petstore_webhook_secrets_plaintext counts. It runs before the parts that
// read the database beside it, whose reads could keep the WAL, which held
// the plaintext, from being emptied.
func (p *serviceParts) startSecrets() (func() error, error) {
	key, err := atrest.FromEnv(p.app)
	if err != nil {
		return nil, err
	}
	plaintext, err := webhooks.SealSecrets(p.app, key)
	if errors.Is(err, atrest.ErrWALKept) {
		p.s.log.Warn("Webhook secrets: " + err.Error())
	} else if err != nil {
		return nil, fmt.Errorf("webhook secrets: %w", err)
	}
	if plaintext > 0 {
		p.s.log.Warn("Webhook secrets are stored in plaintext in data.db, and in every backup of it: "+
			"serve with --encryptionEnv VAR (PETSTORE_ENCRYPTION_ENV), VAR holding a key of 32 characters, "+
			"and the next start encrypts them (docs/operations.md, \"Secrets at rest\")", "endpoints", plaintext)
	}
	return nil, nil
}

// startOutbox keeps the webhooks' subscriptions at the data version the
// /v1 reads watch, and prepares the outbox's inserts, which the pets writer
// uses until it stops.
func (p *serviceParts) startOutbox() (func() error, error) {
	if err := p.s.outbox.Watch(p.version.Version); err != nil {
		return nil, err
	}
	return p.s.outbox.Close, nil
}

// startPetWriter starts the writer of /v1's creates, which writes their
// webhook events in the same transactions.
func (p *serviceParts) startPetWriter() (func() error, error) {
	events, err := pets.NewEvents(p.app, p.s.log)
	if err != nil {
		return nil, err
	}
	writer, err := pets.StartWriter(p.app)
	if err != nil {
		return nil, err
	}
	writer.OnCreated(events.Created)
	outbox, writes := p.s.outbox, p.writes
	writer.OnInserted(func(tx core.App, rows []pets.Row) error {
		// The last moment before the commit: a cluster node whose fence
		// closed while the creates waited commits none of them.
		if !writes.Open() {
			return api.ErrNotLeader
		}
		return outbox.PetsCreated(tx, rows...)
	})
	if p.s.cluster != nil {
		writer.OnAcknowledge(clustergate.Acknowledge(p.s.cluster))
	}
	if p.metrics != nil {
		writer.OnCommitted(p.metrics.ObservePetsCommit)
	}
	p.petWriter = writer
	return func() error { writer.Stop(); return nil }, nil
}

func (p *serviceParts) startRequestLog() (func() error, error) {
	reqlog, err := requestlog.Start(p.app, requestlog.Config{
		Mode: p.opts.RequestLog, Console: p.s.log, AccessLog: p.opts.AccessLog, SlowRequest: p.opts.SlowRequest,
	})
	if err != nil {
		return nil, err
	}
	p.reqlog = reqlog
	return func() error { reqlog.Stop(); return nil }, nil
}

// startMetrics serves the metrics on --metrics-addr, when it is set.
func (p *serviceParts) startMetrics() (func() error, error) {
	if p.metrics == nil {
		return nil, nil
	}
	stop, err := startMetrics(p.app, p.opts.MetricsAddr, p.metrics, p.reads, p.version, p.limiter, p.reqlog, p.s.log)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", p.opts.MetricsAddr, err)
	}
	return stop, nil
}

func (p *serviceParts) startDeliverer() (func() error, error) {
	cfg := webhooks.Config{Targets: webhooks.Targets{AllowPrivate: p.opts.WebhooksAllowPrivate}, Log: p.s.log, Gate: p.writes}
	if p.metrics != nil {
		cfg.Observer = p.metrics
	}
	deliverer, err := webhooks.StartDeliverer(p.app, p.s.outbox, cfg)
	if err != nil {
		return nil, err
	}
	return func() error { deliverer.Stop(); return nil }, nil
}
