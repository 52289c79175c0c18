package api_test

import (
	"database/sql"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"petstore/testkit/apptest"
)

// TestRequestLogFloodIsBounded sends 20,000 keyless requests (refused with
// 401, then 429) with a 1,000-byte User-Agent from one address. The request
// log writes at most two rows per client network, status and minute (the
// first refusal, and one counting the others), each field cut;
// auxiliary.db grows by at most 2 MB.
func TestRequestLogFloodIsBounded(t *testing.T) {
	apptest.Slow(t)
	s := apptest.Start(t, "")
	const requests = 20_000
	userAgent := strings.Repeat("u", 1000)
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
	var wg sync.WaitGroup
	work := make(chan struct{}, requests)
	for range requests {
		work <- struct{}{}
	}
	close(work)
	for range 8 {
		wg.Go(func() {
			for range work {
				req, _ := http.NewRequest(http.MethodGet, s.URL+"/v1/pets", nil)
				req.Header.Set("User-Agent", userAgent)
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusTooManyRequests {
					t.Errorf("a keyless request: %d", resp.StatusCode)
					return
				}
			}
		})
	}
	wg.Wait()
	s.Stop(t) // writes the rows still held for this minute

	db, err := sql.Open("sqlite", filepath.Join(s.Dir, "auxiliary.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT data FROM _logs WHERE json_extract(data, '$.url') LIKE '/v1/%'")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	var n int
	for rows.Next() {
		var raw string
		if err := rows.Scan(&raw); err != nil {
			t.Fatal(err)
		}
		var data struct {
			Count     int64  `json:"count"`
			UserAgent string `json:"userAgent"`
		}
		if err := json.Unmarshal([]byte(raw), &data); err != nil {
			t.Fatal(err)
		}
		n++
		total += max(data.Count, 1)
		if len(data.UserAgent) > 300 {
			t.Errorf("a %d-byte User-Agent in a row", len(data.UserAgent))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// 401s and 429s, each in two rows a minute; the flood may span a minute's end.
	if n < 3 || n > 8 || total != requests {
		t.Errorf("%d rows standing for %d requests; want 3 to 8 rows standing for %d", n, total, requests)
	}
	growth := logSize() - before
	t.Logf("auxiliary.db grew by %d bytes for %d refused requests in %d rows", growth, requests, n)
	if growth > 2<<20 {
		t.Errorf("auxiliary.db grew by %d bytes, more than 2 MB", growth)
	}
}
