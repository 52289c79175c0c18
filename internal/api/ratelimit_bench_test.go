package api_test

import (
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"petstore/internal/apikeys"
	"petstore/internal/limits"
	"petstore/testkit/apptest"
	"petstore/testkit/redistest"
)

// BenchmarkListPetsByStore measures a whole GET /v1/pets over loopback with
// the rate-limit counters in memory and in Redis (a private redis-server),
// side by side, and reports each one's median as p50-µs:
//
//	go test -run '^$' -bench ByStore -count 5 ./internal/api/
func BenchmarkListPetsByStore(b *testing.B) {
	for _, name := range []string{"memory", "redis"} {
		b.Run(name, func(b *testing.B) {
			var cfg limits.Config
			if name == "redis" {
				cfg.Redis = apptest.Redis(b, redistest.Start(b).URL(0))
			}
			s := apptest.StartWith(b, apptest.Config{Limits: cfg})
			key := s.NewKey(b, apikeys.NewKey{Plan: "enterprise", PerMinute: 1 << 40, PerDay: 1 << 40})
			// A plain client: the harness's own checks the contract, which
			// would be measured too.
			client := &http.Client{}
			req, err := http.NewRequest(http.MethodGet, s.URL+"/v1/pets", nil)
			if err != nil {
				b.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+key)
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				took = append(took, time.Since(start))
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2])/float64(time.Microsecond), "p50-µs")
		})
	}
}
