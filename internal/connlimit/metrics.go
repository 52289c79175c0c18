package connlimit

import "github.com/prometheus/client_golang/prometheus"

// Collectors are the limited listener's figures: connections open, and
// connections refused by the bound they were over (internal/metrics lists
// them).
func (l *Limiter) Collectors() []prometheus.Collector {
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "petstore_http_connections_open", Help: "Connections open on the public listener.",
		}, func() float64 { return float64(l.Open()) }),
	}
	for _, reason := range Reasons {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "petstore_http_connections_refused_total", Help: "Connections the public listener closed as soon as accepted, by the bound they were over.",
			ConstLabels: prometheus.Labels{"reason": reason},
		}, func() float64 { return float64(l.Refused(reason)) }))
	}
	return cs
}
