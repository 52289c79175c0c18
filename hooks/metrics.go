package hooks

import (
	"database/sql"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/prometheus/client_golang/prometheus"

	"petstore/internal/apikeys"
	"petstore/internal/backup"
	"petstore/internal/categories"
	"petstore/internal/connlimit"
	"petstore/internal/idempotency"
	"petstore/internal/metrics"
	"petstore/internal/pets"
	"petstore/internal/requestlog"
	"petstore/internal/webhooks"
	"petstore/limits"
)

// startMetrics serves m on addr (metrics.Serve) with the figures read at
// each scrape, each from the package that owns it: pets, categories, keys
// by state, the databases' files, the limiter's Redis, realtime
// subscribers, the request log's rows, the public listener's connections,
// the newest backup. It returns the listener's stop.
func startMetrics(app core.App, addr string, m *metrics.Metrics, reads *sql.DB, limiter *limits.Limiter, reqlog *requestlog.Logger,
	conns *connlimit.Limiter, log *slog.Logger) (func() error, error) {
	count := func(read func(*sql.DB) (int64, error)) func() (int64, error) {
		return func() (int64, error) { return read(reads) }
	}
	m.Register(
		metrics.Count("petstore_pets", "Pets stored.", count(pets.Count), log),
		metrics.Count("petstore_categories", "Categories named.", count(categories.Count), log),
		metrics.Count("petstore_categories_unnamed", "Numbers pets carry as categoryId that no category names.", count(categories.CountUnnamed), log),
		metrics.Count("petstore_webhook_outbox_pending", "Webhook events not delivered yet (all instances).", count(webhooks.Pending), log),
		metrics.Count("petstore_idempotency_keys", "Idempotency-Keys remembered.", count(idempotency.Count), log),
		metrics.Counts("petstore_api_keys", "API keys by state.", "state", func() (map[string]int64, error) {
			return apikeys.CountByState(reads, time.Now())
		}, log),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "petstore_realtime_subscribers", Help: "PocketBase realtime clients connected."},
			func() float64 { return float64(app.SubscriptionsBroker().TotalClients()) }),
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
		}, backup.LastTime(app, log)),
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

	return m.Serve(addr, log)
}
