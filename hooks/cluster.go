package hooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"
	"github.com/prometheus/client_golang/prometheus"

	"petstore/internal/api"
	"petstore/internal/audit"
	"petstore/internal/cluster"
	"petstore/internal/connlimit"
	"petstore/internal/proxytrust"
)

// handoverHookPriority runs the handover before anything else of the
// shutdown (the drain, shutdownHookPriority): writes stop at once.
const handoverHookPriority = shutdownHookPriority - 1

// handoverTimeout bounds the handover: shipping the last transactions and
// resigning.
const handoverTimeout = 5 * time.Second

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
		p.metrics.Register(clusterCollectors(process)...)
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

// serveCluster binds what a leader adds to the server: writes refused
// whenever the fence is closed, and the handover on SIGTERM.
func serveCluster(se *core.ServeEvent, process *cluster.Process, log *slog.Logger) {
	se.Router.Bind(api.RefuseWrites(process.Node.MayWrite))
	se.App.OnTerminate().Bind(&hook.Handler[*core.TerminateEvent]{
		Id:       "petstoreClusterHandover",
		Priority: handoverHookPriority,
		Func: func(te *core.TerminateEvent) error {
			if te.IsRestart {
				return te.Next()
			}
			term := process.Node.Status().Term
			// Written while the node may still write, and shipped with the
			// last transactions.
			if err := writeClusterAudit(te.App, audit.ClusterSteppedDown, process.Node.Name(), term, "handover"); err != nil {
				log.Error("Could not record the handover in the audit trail", "error", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), handoverTimeout)
			defer cancel()
			// An empty transaction waits for the one write connection:
			// every write that passed the fence has committed by then.
			settle := func() error { return te.App.RunInTransaction(func(core.App) error { return nil }) }
			if err := process.Handover(ctx, settle); err != nil {
				log.Error("Cluster: the handover failed; a follower takes over once the lease ends", "error", err)
			}
			return te.Next()
		},
	})
}

// acknowledgeShipped is the pets writer's acknowledgement under
// --cluster-sync: a create is answered once shipped to the replica while
// the lease is held, or refused with 503 (committed, not acknowledged).
func acknowledgeShipped(process *cluster.Process) func() error {
	return func() error {
		switch err := process.Shipped(context.Background()); {
		case errors.Is(err, cluster.ErrNotLeading):
			return api.ErrNotLeader
		case err != nil:
			return api.ErrNotShipped
		}
		return nil
	}
}

// promoted records that the node serves as the leader of term: the fence
// opens, and the audit trail says so.
func promoted(app core.App, process *cluster.Process, term int64, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	process.Serving(ctx)
	if err := writeClusterAudit(app, audit.ClusterPromoted, process.Node.Name(), term, "elected"); err != nil {
		log.Error("Could not record the promotion in the audit trail", "error", err)
	}
	log.Info("Cluster: serving as the leader", "term", term)
}

func writeClusterAudit(app core.App, action audit.Action, node string, term int64, reason string) error {
	return app.RunInTransaction(func(tx core.App) error {
		return audit.Write(tx, audit.Entry{Action: action, By: audit.System,
			Details: map[string]any{"term": term, "node": node, "reason": reason}})
	})
}

// clusterCollectors are cluster mode's figures (internal/metrics lists
// them).
func clusterCollectors(process *cluster.Process) []prometheus.Collector {
	status := process.Node.Status
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "petstore_cluster_term", Help: "The term this node leads; 0 when it does not lead."},
			func() float64 { return float64(status().Term) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "petstore_cluster_leader_term", Help: "The term of the leader this node knows; 0 when it knows none."},
			func() float64 {
				if l := status().Leader; l != nil {
					return float64(l.Term)
				}
				return 0
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "petstore_cluster_elections_total", Help: "Leader changes this node has seen."},
			func() float64 { return float64(status().Elections) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "petstore_cluster_lag_seconds", Help: "How long the oldest transaction this follower has not applied has been in the replica."},
			func() float64 { return process.Data.Lag().Seconds }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "petstore_cluster_lag_transactions", Help: "Transactions in the replica this follower has not applied."},
			func() float64 { return float64(process.Data.Lag().Transactions) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "petstore_cluster_replica_up", Help: "On the leader: 1 while its data ships to the replica, 0 while the replica's storage fails."},
			func() float64 {
				if s, ok := process.Data.Shipping(); ok && s.Err == nil {
					return 1
				}
				return 0
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "petstore_cluster_syncs_total", Help: "On the leader: shipments made for writes waiting for theirs (--cluster-sync, a handover); each serves every write waiting when it began."},
			func() float64 {
				s, _ := process.Data.Shipping()
				return float64(s.Syncs)
			}),
	}
	for _, role := range []cluster.Role{cluster.Candidate, cluster.Follower, cluster.Leader} {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "petstore_cluster_role", Help: "1 for this node's role in the cluster, 0 for the others.", ConstLabels: prometheus.Labels{"role": string(role)},
		}, func() float64 {
			if status().Role == role {
				return 1
			}
			return 0
		}))
	}
	return cs
}

// clusterHealth is what /readyz says of the node.
func clusterHealth(process *cluster.Process) func() api.ClusterHealth {
	return func() api.ClusterHealth {
		h := api.ClusterHealth{Term: process.Node.Status().Term, Leading: process.Node.MayWrite()}
		if status, ok := process.Data.Shipping(); ok {
			h.ReplicaErr = status.Err
		}
		return h
	}
}
