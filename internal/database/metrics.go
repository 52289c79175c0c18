package database

import (
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
)

// FileCollectors are the sizes of SQLite's files in dataDir, read at each
// scrape (internal/metrics lists them).
func FileCollectors(dataDir string) []prometheus.Collector {
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
