package hooks

import (
	"database/sql"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/prometheus/client_golang/prometheus"

	"petstore/internal/apikeys"
	"petstore/internal/connlimit"
	"petstore/internal/metrics"
	"petstore/internal/requestlog"
	"petstore/limits"
)

// startMetrics serves m at GET /metrics on addr, a listener of its own (never
// the public one), with the figures read at each scrape: pets, categories, keys by state,
// the databases' files, the limiter's Redis, realtime subscribers, the
// request log's rows, the public listener's connections, the newest backup. It returns the
// listener's stop.
func startMetrics(app core.App, addr string, m *metrics.Metrics, reads *sql.DB, limiter *limits.Limiter, reqlog *requestlog.Logger,
	conns *connlimit.Limiter, log *slog.Logger) (func() error, error) {
	m.Register(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "petstore_pets", Help: "Pets stored."},
			countRows(reads, "SELECT COUNT(*) FROM pets", log)),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "petstore_categories", Help: "Categories named."},
			countRows(reads, "SELECT COUNT(*) FROM categories", log)),
		// idx_pets_category serves the distinct numbers in order.
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "petstore_categories_unnamed", Help: "Numbers pets carry as categoryId that no category names."},
			countRows(reads, "SELECT COUNT(DISTINCT categoryId) FROM pets p WHERE NOT EXISTS (SELECT 1 FROM categories c WHERE c.number = p.categoryId)", log)),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "petstore_webhook_outbox_pending", Help: "Webhook events not delivered yet (all instances)."},
			countRows(reads, "SELECT COUNT(*) FROM webhook_endpoints e JOIN webhook_events v ON v.endpoint = e.id AND v.status = 'pending'", log)),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "petstore_idempotency_keys", Help: "Idempotency-Keys remembered."},
			countRows(reads, "SELECT COUNT(*) FROM idempotency_keys", log)),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "petstore_realtime_subscribers", Help: "PocketBase realtime clients connected."},
			func() float64 { return float64(app.SubscriptionsBroker().TotalClients()) }),
		keyStates{reads, log},
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "petstore_requestlog_rows_total", Help: "Rows written to the request log."},
			func() float64 { return float64(reqlog.Written()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "petstore_requestlog_dropped_total", Help: "Requests without a row of their own in the request log, by reason.",
			ConstLabels: prometheus.Labels{"reason": "full"},
		}, func() float64 { return float64(reqlog.Dropped()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "petstore_requestlog_dropped_total", Help: "Requests without a row of their own in the request log, by reason.",
			ConstLabels: prometheus.Labels{"reason": "coalesced"},
		}, func() float64 { return float64(reqlog.Coalesced()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "petstore_requestlog_dropped_total", Help: "Requests without a row of their own in the request log, by reason.",
			ConstLabels: prometheus.Labels{"reason": "bounded"},
		}, func() float64 { return float64(reqlog.Counted()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "petstore_http_connections_open", Help: "Connections open on the public listener.",
		}, func() float64 { return float64(conns.Open()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "petstore_backup_last_success_timestamp_seconds", Help: "Unix time of the newest of PocketBase's backups; 0 without one.",
		}, lastBackupTime(app, log)),
	)
	for _, reason := range connlimit.Reasons {
		m.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "petstore_http_connections_refused_total", Help: "Connections the public listener closed as soon as accepted, by the bound they were over.",
			ConstLabels: prometheus.Labels{"reason": reason},
		}, func() float64 { return float64(conns.Refused(reason)) }))
	}
	for _, file := range []string{"data.db", "data.db-wal", "auxiliary.db", "auxiliary.db-wal"} {
		path := filepath.Join(app.DataDir(), file)
		m.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "petstore_sqlite_file_bytes", Help: "Size of SQLite's files.", ConstLabels: prometheus.Labels{"file": file},
		}, func() float64 {
			info, err := os.Stat(path)
			if err != nil {
				return 0
			}
			return float64(info.Size())
		}))
	}
	if limiter.Counting() != "memory" {
		m.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "petstore_ratelimit_redis_up", Help: "1 while Redis counts, 0 while each instance counts locally.",
		}, func() float64 {
			if limiter.Counting() == "redis" {
				return 1
			}
			return 0
		}))
		m.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "petstore_ratelimit_redis_lost_total", Help: "Times counting moved from Redis to this instance's memory.",
		}, func() float64 { return float64(limiter.RedisLost()) }))
	}

	return serveMetrics(addr, m, log)
}

// serveMetrics serves m at GET /metrics on a listener of its own on addr,
// until the returned stop.
func serveMetrics(addr string, m *metrics.Metrics, log *slog.Logger) (func() error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	// Scrapers are few and quick: the listener holds a few connections,
	// each for a short while, so that a flood of it leaves the process its
	// descriptors (the public listener's bounds keep room for these).
	ln = connlimit.New(connlimit.Config{Global: metricsMaxConns, PerAddress: metricsMaxConns / 4, Listener: "metrics listener"}, log).Wrap(ln)
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

// metricsMaxConns bounds the metrics listener's connections: a few
// Prometheus servers, each with a keep-alive connection or two.
const metricsMaxConns = 32

// countRows reads a count at each scrape; a failure logs and reads as 0.
func countRows(db *sql.DB, query string, log *slog.Logger) func() float64 {
	return func() float64 {
		var n int64
		if err := db.QueryRow(query).Scan(&n); err != nil {
			log.Warn("A metric could not be read", "query", query, "error", err)
		}
		return float64(n)
	}
}

// keyStates is petstore_api_keys{state}, counted at each scrape.
type keyStates struct {
	db  *sql.DB
	log *slog.Logger
}

var keyStatesDesc = prometheus.NewDesc("petstore_api_keys", "API keys by state.", []string{"state"}, nil)

func (k keyStates) Describe(ch chan<- *prometheus.Desc) { ch <- keyStatesDesc }

func (k keyStates) Collect(ch chan<- prometheus.Metric) {
	counts, err := apikeys.CountByState(k.db, time.Now())
	if err != nil {
		k.log.Warn("A metric could not be read", "metric", "petstore_api_keys", "error", err)
		return
	}
	for state, n := range counts {
		ch <- prometheus.MustNewConstMetric(keyStatesDesc, prometheus.GaugeValue, float64(n), state)
	}
}
