package api_test

import (
	"database/sql"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"petstore/internal/limits"
	"petstore/testkit/apptest"
)

// TestRequestLogFloodIsBounded sends two floods from one address: 20,000
// keyless requests (refused with 401, then 429) with a 1,000-byte
// User-Agent, and 5,000 requests for unknown paths of 1,000 bytes (404s),
// all inside the guest window. The request log writes, per client network
// and minute, the first of each status, ten rows in all (401 and 429 write
// their first alone), and one row per status counting the others; each
// field cut; auxiliary.db grows by at most 2 MB.
func TestRequestLogFloodIsBounded(t *testing.T) {
	apptest.Slow(t)
	s := apptest.StartWith(t, apptest.Config{Limits: limits.Config{GuestPerMinute: 1_000_000}})
	logSize := func() int64 {
		t.Helper()
		db, err := sql.Open("sqlite", filepath.Join(s.Dir, "auxiliary.db")+"?_pragma=busy_timeout(10000)")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			t.Fatal(err)
		}
		var size int64
		for _, name := range []string{"auxiliary.db", "auxiliary.db-wal"} {
			if info, err := os.Stat(filepath.Join(s.Dir, name)); err == nil {
				size += info.Size()
			}
		}
		return size
	}
	before := logSize()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	flood := func(requests int, path string, userAgent string, statuses ...int) {
		var wg sync.WaitGroup
		work := make(chan struct{}, requests)
		for range requests {
			work <- struct{}{}
		}
		close(work)
		for range 8 {
			wg.Go(func() {
				for range work {
					req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
					req.Header.Set("User-Agent", userAgent)
					resp, err := client.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					resp.Body.Close()
					if !slices.Contains(statuses, resp.StatusCode) {
						t.Errorf("GET %.40s…: %d, want one of %v", path, resp.StatusCode, statuses)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	const keyless, unknown = 20_000, 5_000
	flood(keyless, "/v1/pets", strings.Repeat("u", 1000), http.StatusUnauthorized, http.StatusTooManyRequests)
	flood(unknown, "/api/"+strings.Repeat("x", 995), "flood", http.StatusNotFound)
	s.Stop(t) // writes the rows still held for this minute

	db, err := sql.Open("sqlite", filepath.Join(s.Dir, "auxiliary.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows := func(like string) (n int, total int64) {
		t.Helper()
		rows, err := db.Query("SELECT data FROM _logs WHERE json_extract(data, '$.url') LIKE ?", like)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var raw string
			if err := rows.Scan(&raw); err != nil {
				t.Fatal(err)
			}
			var data struct {
				Count     int64  `json:"count"`
				UserAgent string `json:"userAgent"`
				URL       string `json:"url"`
			}
			if err := json.Unmarshal([]byte(raw), &data); err != nil {
				t.Fatal(err)
			}
			n++
			total += max(data.Count, 1)
			if len(data.UserAgent) > 300 || len(data.URL) > 1000 {
				t.Errorf("a %d-byte User-Agent or a %d-byte URL in a row", len(data.UserAgent), len(data.URL))
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return n, total
	}
	// 401s and 429s, each in two rows a minute; the flood may span a minute's end.
	if n, total := rows("/v1/%"); n < 3 || n > 8 || total != keyless {
		t.Errorf("keyless: %d rows standing for %d requests; want 3 to 8 rows standing for %d", n, total, keyless)
	}
	// 404s: with the refusals, ten rows of their own a minute, and one
	// counting the others.
	if n, total := rows("/api/x%"); n < 2 || n > 22 || total != unknown {
		t.Errorf("unknown paths: %d rows standing for %d requests; want 2 to 22 rows standing for %d", n, total, unknown)
	}
	growth := logSize() - before
	t.Logf("auxiliary.db grew by %d bytes for %d failed requests", growth, keyless+unknown)
	if growth > 2<<20 {
		t.Errorf("auxiliary.db grew by %d bytes, more than 2 MB", growth)
	}
}
