package limits

import "github.com/prometheus/client_golang/prometheus"

// Collectors are the limiter's figures while Redis counts: whether it does,
// and how often counting moved to memory (internal/metrics lists them);
// none while it counts in memory.
func (l *Limiter) Collectors() []prometheus.Collector {
	if l.Counting() == "memory" {
		return nil
	}
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "petstore_ratelimit_redis_up", Help: "1 while Redis counts, 0 while each instance counts locally.",
		}, func() float64 {
			if l.Counting() == "redis" {
				return 1
			}
			return 0
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "petstore_ratelimit_redis_lost_total", Help: "Times counting moved from Redis to this instance's memory.",
		}, func() float64 { return float64(l.RedisLost()) }),
	}
}
