package metrics

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

// Count is the gauge name, read with read at each scrape, from the package
// that owns what it counts; a failure logs and reads as 0.
func Count(name, help string, read func() (int64, error), log *slog.Logger) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
		n, err := read()
		if err != nil {
			log.Warn("A metric could not be read", "metric", name, "error", err)
		}
		return float64(n)
	})
}

// Counts is the gauge name with one label, whose values and counts read
// returns at each scrape; a failure logs and reads as no series.
func Counts(name, help, label string, read func() (map[string]int64, error), log *slog.Logger) prometheus.Collector {
	return counts{desc: prometheus.NewDesc(name, help, []string{label}, nil), name: name, read: read, log: log}
}

type counts struct {
	desc *prometheus.Desc
	name string
	read func() (map[string]int64, error)
	log  *slog.Logger
}

func (c counts) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c counts) Collect(ch chan<- prometheus.Metric) {
	counts, err := c.read()
	if err != nil {
		c.log.Warn("A metric could not be read", "metric", c.name, "error", err)
		return
	}
	for value, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), value)
	}
}
