package metrics

import (
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"petstore/internal/cluster"
	"petstore/internal/connlimit"
	"petstore/internal/dataversion"
	"petstore/internal/limits"
	"petstore/internal/requestlog"
)

// SQLiteFiles are the sizes of SQLite's files in dataDir, read at each
// scrape.
func SQLiteFiles(dataDir string) []prometheus.Collector {
	var cs []prometheus.Collector
	for _, file := range []string{"data.db", "data.db-wal", "auxiliary.db", "auxiliary.db-wal"} {
		path := filepath.Join(dataDir, file)
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "petstore_sqlite_file_bytes", Help: "Size of SQLite's files.", ConstLabels: prometheus.Labels{"file": file},
		}, func() float64 {
			info, err := os.Stat(path)
			if err != nil {
				return 0
			}
			return float64(info.Size())
		}))
	}
	return cs
}

// Redis are the rate limiter's figures while Redis counts: whether it does,
// and how often counting moved to memory; none while it counts in memory.
func Redis(l *limits.Limiter) []prometheus.Collector {
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

// RequestLog are the request log's figures: rows written, and requests
// without a row of their own, by reason.
func RequestLog(l *requestlog.Logger) []prometheus.Collector {
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

// DataVersion is the data version's figure: the reads of it, which a
// request makes only when something committed since the last one (on
// Linux; elsewhere, one per request or per group of concurrent ones).
func DataVersion(w *dataversion.Watch) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "petstore_data_version_reads_total", Help: "Reads of the data version, which /v1's caches follow.",
	}, func() float64 { return float64(w.Reads()) })
}

// Conns are the public listener's figures: connections open, and
// connections refused by the bound they were over.
func Conns(l *connlimit.Limiter) []prometheus.Collector {
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "petstore_http_connections_open", Help: "Connections open on the public listener.",
		}, func() float64 { return float64(l.Open()) }),
	}
	for _, reason := range connlimit.Reasons {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "petstore_http_connections_refused_total", Help: "Connections the public listener closed as soon as accepted, by the bound they were over.",
			ConstLabels: prometheus.Labels{"reason": reason},
		}, func() float64 { return float64(l.Refused(reason)) }))
	}
	return cs
}

// Cluster are cluster mode's figures, read from p at each scrape.
func Cluster(p *cluster.Process) []prometheus.Collector {
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
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "petstore_cluster_forged_records_total",
			Help: "Leader records in etcd this node refused, each once: not authenticated by the cluster's secret (someone else wrote them, or the nodes' secrets differ)."},
			func() float64 { return float64(status().ForgedRecords) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "petstore_cluster_forwards_refused_total",
			Help: "Requests naming a forwarding node that this node refused as the leader: not authenticated by the cluster's secret."},
			func() float64 { return float64(status().RefusedForwards) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "petstore_cluster_leader_unshipped_seconds",
			Help: "How long the leader's oldest commit not in the replica had waited, as the leader last said (whole seconds): what a failover would lose."},
			func() float64 {
				if status().Role == cluster.Leader {
					return p.Data.Unshipped().Truncate(time.Second).Seconds()
				}
				return status().LeaderUnshipped.Seconds()
			}),
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
	for _, role := range []cluster.Role{cluster.Candidate, cluster.Follower, cluster.Leader} {
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
