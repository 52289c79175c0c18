package metrics

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"petstore/internal/connlimit"
)

// maxConns bounds the metrics listener's connections: a few Prometheus
// servers, each with a keep-alive connection or two.
const maxConns = 32

// Serve serves the registry at GET /metrics on a listener of its own on
// addr (never the public one), until the returned stop.
func (m *Metrics) Serve(addr string, log *slog.Logger) (stop func() error, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	// Scrapers are few and quick: the listener holds a few connections,
	// each for a short while, so that a flood of it leaves the process its
	// descriptors (the public listener's bounds keep room for these).
	ln = connlimit.New(connlimit.Config{Global: maxConns, PerAddress: maxConns / 4, Listener: "metrics listener"}, log).Wrap(ln)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 30 * time.Second}
	go func() {
		if err := server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("The metrics listener stopped", "address", addr, "error", err)
		}
	}()
	log.Info("Serving metrics", "address", "http://"+ln.Addr().String()+"/metrics")
	return server.Close, nil
}
