package requestlog

import "github.com/prometheus/client_golang/prometheus"

// Collectors are the request log's figures: rows written, and requests
// without a row of their own, by reason (internal/metrics lists them).
func (l *Logger) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "petstore_requestlog_rows_total", Help: "Rows written to the request log."},
			func() float64 { return float64(l.Written()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "petstore_requestlog_dropped_total", Help: "Requests without a row of their own in the request log, by reason.",
			ConstLabels: prometheus.Labels{"reason": "full"},
		}, func() float64 { return float64(l.Dropped()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "petstore_requestlog_dropped_total", Help: "Requests without a row of their own in the request log, by reason.",
			ConstLabels: prometheus.Labels{"reason": "coalesced"},
		}, func() float64 { return float64(l.Coalesced()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "petstore_requestlog_dropped_total", Help: "Requests without a row of their own in the request log, by reason.",
			ConstLabels: prometheus.Labels{"reason": "bounded"},
		}, func() float64 { return float64(l.Counted()) }),
	}
}
