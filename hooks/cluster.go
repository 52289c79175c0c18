package hooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/coreos/go-systemd/v22/daemon"

	"petstore/internal/cluster"
	"petstore/internal/connlimit"
	"petstore/internal/proxytrust"
)

// handoverHookPriority runs the handover before anything else of the
// shutdown (the drain, shutdownHookPriority): writes stop at once.
const handoverHookPriority = shutdownHookPriority - 1

// ErrStopped is serve's error when a cluster node was stopped before it
// served: a clean stop.
var ErrStopped = errors.New("stopped before serving")

// startCluster runs this process as a cluster node (serve --cluster-etcd),
// before the bootstrap opens the data directory: it listens on --http with
// the gate, and returns once the node has won the election and promoted its
// data, with the listener PocketBase then serves on. A follower stays here
// for as long as it follows.
func (p *serviceParts) startCluster() (func() error, error) {
	cfg := p.opts.Cluster
	if !cfg.Enabled() {
		return nil, nil
	}
	// The dashboard's logs are in the database, which a follower does not
	// open: the node logs to the console.
	log := slog.New(slog.DiscardHandler)
	if p.opts.Console != nil {
		log = slog.New(p.opts.Console)
	}
	parsed, _ := connlimit.ParseAddresses(p.opts.Server.ProxyAddresses) // checked by Options.Check
	process, err := cluster.Start(cfg, p.opts.HTTPAddr, p.app.DataDir(), log, proxytrust.Proxies(parsed).Has)
	if err != nil {
		return nil, err
	}
	// Under systemd's Type=notify a node is started once it listens with
	// its gate, leader or not: a follower may follow for months.
	if _, err := daemon.SdNotify(false, daemon.SdNotifyReady); err != nil {
		log.Warn("Could not tell systemd that petstore is ready", "error", err)
	}
	// A follower's figures (its role, its lag) are served from its start;
	// the metrics part serves the same registry once this node leads.
	stopMetrics := func() error { return nil }
	if p.metrics != nil {
		p.metrics.Register(process.Collectors()...)
		if stopMetrics, err = p.metrics.Serve(p.opts.MetricsAddr, log); err != nil {
			_ = process.Close()
			return nil, fmt.Errorf("--metrics-addr %s: %w", p.opts.MetricsAddr, err)
		}
	}
	// A follower stopped (SIGTERM, Ctrl-C) leaves the cluster at once:
	// it has nothing to drain.
	stopped, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	term, listener, err := process.WaitElected(stopped)
	stop()
	_ = stopMetrics()
	if err != nil {
		_ = process.Close()
		if stopped.Err() != nil {
			_, _ = daemon.SdNotify(false, daemon.SdNotifyStopping) // nothing to do about a failure at a stop
			log.Info("Cluster: stopped as a follower")
			return nil, ErrStopped
		}
		return nil, err
	}
	p.s.cluster, p.s.listener, p.clusterTerm = process, listener, term
	return process.Close, nil
}
