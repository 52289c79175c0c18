package hooks_test

import (
	"io"
	"net/http"
	"os"
	"testing"

	"petstore/apikeys"
	"petstore/internal/apptest"
	"petstore/limits"
)

// BenchmarkListPetsByStore measures a whole GET /v1/pets over loopback with
// the rate-limit counters in memory and in Redis, side by side:
//
//	PETSTORE_TEST_REDIS=redis://127.0.0.1:6379/15 go test -run '^$' -bench ByStore -count 5 ./hooks/
func BenchmarkListPetsByStore(b *testing.B) {
	stores := map[string]limits.Config{"memory": {}}
	if url := os.Getenv("PETSTORE_TEST_REDIS"); url != "" {
		stores["redis"] = limits.Config{RedisURL: url, Prefix: "petstore-bench"}
	}
	for _, name := range []string{"memory", "redis"} {
		cfg, ok := stores[name]
		if !ok {
			continue
		}
		b.Run(name, func(b *testing.B) {
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
			for b.Loop() {
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
	}
}
