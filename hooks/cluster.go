package hooks

import (
	"fmt"
	"log/slog"

	"petstore/internal/cluster"
	"petstore/internal/metrics"
	"petstore/internal/proxytrust"
)

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
	process, err := cluster.Start(cfg, p.opts.HTTPAddr, p.app.DataDir(), log, proxytrust.Clients{Proxies: p.opts.Server.ProxyAddresses, Headers: p.opts.Server.TrustedProxyHeaders})
	if err != nil {
		return nil, err
	}
	// A follower's figures (its role, its lag) are served from its start;
	// the metrics part serves the same registry once this node leads.
	stopMetrics := func() error { return nil }
	if p.metrics != nil {
		p.metrics.Register(metrics.Cluster(process)...)
		if stopMetrics, err = p.metrics.Serve(p.opts.MetricsAddr, log); err != nil {
			_ = process.Close()
			return nil, fmt.Errorf("--metrics-addr %s: %w", p.opts.MetricsAddr, err)
		}
	}
	term, listener, err := process.Follow(log)
	_ = stopMetrics()
	if err != nil {
		_ = process.Close()
		return nil, err
	}
	p.s.cluster, p.s.listener, p.clusterTerm = process, listener, term
	return process.Close, nil
}
