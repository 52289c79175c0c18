package hooks

import (
	"context"
	"log/slog"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"

	"petstore/internal/api"
	"petstore/internal/audit"
	"petstore/internal/cluster"
)

// handoverHookPriority runs the handover before anything else of the
// shutdown (the drain, shutdownHookPriority): writes stop at once.
const handoverHookPriority = shutdownHookPriority - 1

// handoverTimeout bounds the handover: shipping the last transactions and
// resigning.
const handoverTimeout = 5 * time.Second

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
	process, err := cluster.Start(cfg, p.opts.HTTPAddr, p.app.DataDir(), log)
	if err != nil {
		return nil, err
	}
	term, listener, err := process.WaitElected(context.Background())
	if err != nil {
		_ = process.Close()
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
			if err := process.Handover(ctx); err != nil {
				log.Error("Cluster: the handover failed; a follower takes over once the lease ends", "error", err)
			}
			return te.Next()
		},
	})
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
