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

	planRequests   *prometheus.CounterVec
	planCounters   sync.Map // planOutcome → prometheus.Counter, so that a request builds no label strings
	thresholds     *prometheus.CounterVec
	planLabelsMu   sync.Mutex
	planLabelsSeen map[string]bool // the plans that are their own label value, at most MaxPlanLabels
}

type planOutcome struct{ plan, outcome string }

// MaxPlanLabels bounds the plan label of the counters by plan: plans are
// staff's, any number of them; the first MaxPlanLabels plan names this
// process sees are their own label values, later ones are OtherPlan.
const MaxPlanLabels = 20

// OtherPlan is the plan label of the plans beyond MaxPlanLabels.
const OtherPlan = "other"

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
		planRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "petstore_api_requests_by_plan_total",
			Help: "/v1 requests of API keys answered, by the key's plan (the first 20 plans seen, later ones \"other\") and outcome as the usage history counts it (served, refused, limited, failed).",
		}, []string{"plan", "outcome"}),
		thresholds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "petstore_usage_threshold_events_total",
			Help: "Keys that crossed 80 or 100 % of their day quota, told of (usage.threshold) by this instance, by plan (as petstore_api_requests_by_plan_total) and threshold.",
		}, []string{"plan", "threshold"}),
		planLabelsSeen: map[string]bool{},
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
		m.webhookDeliveries, m.webhookDurations, m.planRequests, m.thresholds, build,
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

// ObservePlanRequest counts one /v1 request of an API key, answered, by
// its plan and its usage outcome (served, refused, limited, failed).
func (m *Metrics) ObservePlanRequest(plan, outcome string) {
	labels := planOutcome{plan, outcome}
	c, ok := m.planCounters.Load(labels)
	if !ok {
		c, _ = m.planCounters.LoadOrStore(labels, m.planRequests.WithLabelValues(m.planLabel(plan), outcome))
	}
	c.(prometheus.Counter).Inc()
}

// ObserveUsageThreshold counts a key's crossing of percent (80 or 100) of
// its day quota, told of.
func (m *Metrics) ObserveUsageThreshold(plan string, percent int64) {
	m.thresholds.WithLabelValues(m.planLabel(plan), strconv.FormatInt(percent, 10)).Inc()
}

// planLabel is plan as a label value: itself for the first MaxPlanLabels
// plans seen, OtherPlan after.
func (m *Metrics) planLabel(plan string) string {
	m.planLabelsMu.Lock()
	defer m.planLabelsMu.Unlock()
	if m.planLabelsSeen[plan] {
		return plan
	}
	if len(m.planLabelsSeen) >= MaxPlanLabels {
		return OtherPlan
	}
	m.planLabelsSeen[plan] = true
	return plan
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
