package cluster

import "github.com/prometheus/client_golang/prometheus"

// Collectors are cluster mode's figures (internal/metrics lists them).
func (p *Process) Collectors() []prometheus.Collector {
	status := p.Node.Status
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "petstore_cluster_term", Help: "The term this node leads; 0 when it does not lead."},
			func() float64 { return float64(status().Term) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "petstore_cluster_leader_term", Help: "The term of the leader this node knows; 0 when it knows none."},
			func() float64 {
				if l := status().Leader; l != nil {
					return float64(l.Term)
				}
				return 0
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "petstore_cluster_elections_total", Help: "Leader changes this node has seen."},
			func() float64 { return float64(status().Elections) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "petstore_cluster_lag_seconds", Help: "How long the oldest transaction this follower has not applied has been in the replica."},
			func() float64 { return p.Data.Lag().Seconds }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "petstore_cluster_lag_transactions", Help: "Transactions in the replica this follower has not applied."},
			func() float64 { return float64(p.Data.Lag().Transactions) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "petstore_cluster_replica_up", Help: "On the leader: 1 while its data ships to the replica, 0 while the replica's storage fails."},
			func() float64 {
				if s, ok := p.Data.Shipping(); ok && s.Err == nil {
					return 1
				}
				return 0
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "petstore_cluster_syncs_total", Help: "On the leader: shipments made for writes waiting for theirs (--cluster-sync, a handover); each serves every write waiting when it began."},
			func() float64 {
				s, _ := p.Data.Shipping()
				return float64(s.Syncs)
			}),
	}
	for _, role := range []Role{Candidate, Follower, Leader} {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "petstore_cluster_role", Help: "1 for this node's role in the cluster, 0 for the others.", ConstLabels: prometheus.Labels{"role": string(role)},
		}, func() float64 {
			if status().Role == role {
				return 1
			}
			return 0
		}))
	}
	return cs
}
