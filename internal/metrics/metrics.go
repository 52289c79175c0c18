package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"petstore/internal/version"
)

// Metrics is petstore's registry and the collectors the request path feeds.
type Metrics struct {
	registry *prometheus.Registry

	requests  *prometheus.HistogramVec
	observers sync.Map // requestLabels → prometheus.Observer, so that a request builds no label strings
	rateLimit *prometheus.CounterVec
	bans      prometheus.Counter
	audits    *prometheus.CounterVec

	idempotency   *prometheus.CounterVec
	writerBatches prometheus.Histogram
	writerCommits prometheus.Histogram

	webhookDeliveries *prometheus.CounterVec
	webhookDurations  prometheus.Histogram
}

type requestLabels struct {
	method, route string
	status        int
}

// Known are the label values of the labelled counters that exist whatever
// the traffic. New makes each series at 0, so that it is scraped from the
// start: a series that appears at its first event hides that event from
// rate() and increase(), and an alert on it cannot tell "none" from "no
// series".
type Known struct {
	Plans               []string // of the rate limiter's decisions: the plan of keyless requests
	RateLimitOutcomes   []string
	IdempotencyOutcomes []string
	WebhookOutcomes     []string
	AuditActions        []string
}

// New makes the registry with the Go and process collectors, the build's
// information, and known's series at 0.
func New(known Known) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "http_server_request_duration_seconds",
			Help:    "Duration of /v1 requests, by method, route pattern and status (OpenTelemetry's HTTP server metric).",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		}, []string{"http_request_method", "http_route", "http_response_status_code"}),
		rateLimit: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "petstore_ratelimit_requests_total",
			Help: "/v1 requests decided by the rate limiter, by plan (anonymous without a valid key) and outcome (admitted, limited, banned).",
		}, []string{"plan", "outcome"}),
		bans: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "petstore_ratelimit_bans_total",
			Help: "Bans of API keys started.",
		}),
		audits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "petstore_audit_events_total",
			Help: "Audit records of API key, webhook endpoint and category changes written (committed) by this instance, by action.",
		}, []string{"action"}),
		idempotency: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "petstore_idempotency_requests_total",
			Help: "Creates with an Idempotency-Key, by outcome (stored, replayed, conflict).",
		}, []string{"outcome"}),
		writerBatches: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "petstore_pets_writer_batch_size",
			Help:    "Creates written per commit of the pets writer.",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128},
		}),
		writerCommits: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "petstore_pets_writer_commit_duration_seconds",
			Help:    "One transaction of the pets writer, from its beginning to its commit.",
			Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1},
		}),
		webhookDeliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "petstore_webhook_deliveries_total",
			Help: "Webhook delivery attempts by this instance, by outcome (delivered, retried, failed: the last attempt failed).",
		}, []string{"outcome"}),
		webhookDurations: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "petstore_webhook_delivery_duration_seconds",
			Help:    "One webhook delivery attempt, from connection to answer.",
			Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15},
		}),
	}
	info := version.Read()
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "petstore_build_info",
		Help:        "The running build; always 1.",
		ConstLabels: prometheus.Labels{"version": info.Version, "revision": info.Revision, "goversion": info.GoVersion},
	})
	build.Set(1)
	for _, plan := range known.Plans {
		for _, outcome := range known.RateLimitOutcomes {
			m.rateLimit.WithLabelValues(plan, outcome)
		}
	}
	for _, outcome := range known.IdempotencyOutcomes {
		m.idempotency.WithLabelValues(outcome)
	}
	for _, outcome := range known.WebhookOutcomes {
		m.webhookDeliveries.WithLabelValues(outcome)
	}
	for _, action := range known.AuditActions {
		m.audits.WithLabelValues(action)
	}
	m.registry.MustRegister(m.requests, m.rateLimit, m.bans, m.audits, m.idempotency, m.writerBatches, m.writerCommits,
		m.webhookDeliveries, m.webhookDurations, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Register adds collectors of other parts (gauges read at scrape time).
func (m *Metrics) Register(cs ...prometheus.Collector) { m.registry.MustRegister(cs...) }

// Handler serves the registry in Prometheus' text format, or in
// OpenMetrics to a scraper that asks for it, with the latencies' exemplars.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry, EnableOpenMetrics: true})
}

// ObserveRequest counts one /v1 answer. route is a route pattern, never a
// path a client chose; method one of the standard methods or _OTHER.
// A request with a trace is the bucket's exemplar (served to scrapers that
// ask for OpenMetrics, as Prometheus does with exemplar storage on).
func (m *Metrics) ObserveRequest(method, route string, status int, took time.Duration, traceID string) {
	labels := requestLabels{method, route, status}
	o, ok := m.observers.Load(labels)
	if !ok {
		o, _ = m.observers.LoadOrStore(labels, m.requests.WithLabelValues(method, route, strconv.Itoa(status)))
	}
	if traceID != "" {
		o.(prometheus.ExemplarObserver).ObserveWithExemplar(took.Seconds(), prometheus.Labels{"trace_id": traceID})
		return
	}
	o.(prometheus.Observer).Observe(took.Seconds())
}

// ObserveRateLimit counts one decision of the rate limiter.
func (m *Metrics) ObserveRateLimit(plan, outcome string) {
	m.rateLimit.WithLabelValues(plan, outcome).Inc()
}

// ObserveBan counts a ban started.
func (m *Metrics) ObserveBan() { m.bans.Inc() }

// ObserveAudit counts an audit record, committed, by its action (one of
// package audit's, a bounded set).
func (m *Metrics) ObserveAudit(action string) { m.audits.WithLabelValues(action).Inc() }

// ObserveIdempotency counts a create with an Idempotency-Key by outcome
// (stored, replayed, conflict).
func (m *Metrics) ObserveIdempotency(outcome string) {
	m.idempotency.WithLabelValues(outcome).Inc()
}

// ObservePetsCommit counts one committed transaction of the pets writer:
// the creates it held and how long it took.
func (m *Metrics) ObservePetsCommit(creates int, took time.Duration) {
	m.writerBatches.Observe(float64(creates))
	m.writerCommits.Observe(took.Seconds())
}

// ObserveWebhookAttempt counts one webhook delivery attempt by its outcome
// (delivered, retried, failed) and times it.
func (m *Metrics) ObserveWebhookAttempt(outcome string, took time.Duration) {
	m.webhookDeliveries.WithLabelValues(outcome).Inc()
	m.webhookDurations.Observe(took.Seconds())
}
