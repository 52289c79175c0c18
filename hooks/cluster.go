package hooks

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"petstore/internal/cluster"
	"petstore/internal/clustergate"
	"petstore/internal/metrics"
	"petstore/internal/proxytrust"
	"petstore/internal/writegate"
)

// startCluster runs this process as a cluster node (serve --cluster-etcd),
// before the bootstrap opens the data directory: it listens on --http with
// the gate, behind the public listener's guards (connection bounds,
// timeouts), and returns once the node has won the election and promoted
// its data, with the listener PocketBase then serves on. A follower stays
// here for as long as it follows.
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
	ln, err := net.Listen("tcp", p.opts.HTTPAddr)
	if err != nil {
		return nil, err
	}
	process, err := cluster.Start(cfg, p.app.DataDir(), log, p.opts.SteppedDown)
	if err != nil {
		ln.Close()
		return nil, err
	}
	if err := p.connLimiter(log); err != nil {
		ln.Close()
		_ = process.Close()
		return nil, err
	}
	server := p.opts.Server
	gate := clustergate.New(process.Node, proxytrust.Clients{Proxies: server.ProxyAddresses, Headers: server.TrustedProxyHeaders},
		p.s.conns.Config().PerNetwork, log)
	follower := clustergate.Serve(ln.(*net.TCPListener), guarded(&http.Server{}, server, gate), p.s.conns.Wrap)
	// A follower's figures (its role, its lag, its connections) are served
	// from its start; the metrics part serves the same registry once this
	// node leads.
	stopMetrics := func() error { return nil }
	if p.metrics != nil {
		p.metrics.Register(metrics.Cluster(process)...)
		if stopMetrics, err = p.metrics.Serve(p.opts.MetricsAddr, log); err != nil {
			_ = follower.Close()
			_ = process.Close()
			return nil, fmt.Errorf("--metrics-addr %s: %w", p.opts.MetricsAddr, err)
		}
	}
	log.Info("Cluster: the gate listens", "http", ln.Addr().String())
	term, err := process.Follow(log)
	_ = stopMetrics()
	if err != nil {
		_ = follower.Close()
		_ = process.Close()
		return nil, err
	}
	p.s.cluster, p.s.gate, p.clusterTerm = process, gate, term
	p.writes = writegate.Fenced(process.Node.MayWrite)
	p.s.listener = follower.Handover(context.Background())
	return process.Close, nil
}
