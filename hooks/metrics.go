package hooks

import (
	"database/sql"
	"log/slog"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/prometheus/client_golang/prometheus"

	"petstore/internal/apikeys"
	"petstore/internal/backup"
	"petstore/internal/categories"
	"petstore/internal/customers"
	"petstore/internal/dataversion"
	"petstore/internal/idempotency"
	"petstore/internal/limits"
	"petstore/internal/metrics"
	"petstore/internal/pets"
	"petstore/internal/requestlog"
	"petstore/internal/webhooks"
)

// startMetrics serves m on addr (metrics.Serve) with the figures read at
// each scrape, each from the package that owns it: pets, categories, customers, keys
// by state, the databases' files, the limiter's Redis, realtime
// subscribers, the request log's rows, the data version's reads, the newest
// backup (the public listener's connections are registered where its bounds
// are made). It returns the listener's stop.
func startMetrics(app core.App, addr string, m *metrics.Metrics, reads *sql.DB, version *dataversion.Watch, limiter *limits.Limiter,
	reqlog *requestlog.Logger, log *slog.Logger) (func() error, error) {
	count := func(read func(*sql.DB) (int64, error)) func() (int64, error) {
		return func() (int64, error) { return read(reads) }
	}
	m.Register(
		metrics.Count("petstore_pets", "Pets stored.", count(pets.Count), log),
		metrics.Count("petstore_categories", "Categories named.", count(categories.Count), log),
		metrics.Count("petstore_customers", "Customers, who own keys.", count(customers.Count), log),
		metrics.Count("petstore_categories_unnamed", "Numbers pets carry as categoryId that no category names.", count(categories.CountUnnamed), log),
		metrics.Count("petstore_webhook_outbox_pending", "Webhook events not delivered yet (all instances).", count(webhooks.Pending), log),
		metrics.Count("petstore_webhook_secrets_plaintext", "Webhook endpoints whose secret is stored in plaintext: 0 once --encryptionEnv names a key.",
			count(webhooks.PlaintextSecrets), log),
		metrics.Count("petstore_idempotency_keys", "Idempotency-Keys remembered.", count(idempotency.Count), log),
		metrics.Counts("petstore_api_keys", "API keys by state.", "state", func() (map[string]int64, error) {
			return apikeys.CountByState(reads, time.Now())
		}, log),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "petstore_realtime_subscribers", Help: "PocketBase realtime clients connected."},
			func() float64 { return float64(app.SubscriptionsBroker().TotalClients()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "petstore_backup_last_success_timestamp_seconds", Help: "Unix time of the newest of PocketBase's backups; 0 without one.",
		}, backup.LastTime(app, log)),
	)
	m.Register(metrics.SQLiteFiles(app.DataDir())...)
	m.Register(metrics.Redis(limiter)...)
	m.Register(metrics.RequestLog(reqlog)...)
	m.Register(metrics.DataVersion(version))
	return m.Serve(addr, log)
}
