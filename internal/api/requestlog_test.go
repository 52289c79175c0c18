package api_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pocketbase/dbx"

	"petstore/internal/apikeys"
	"petstore/internal/requestlog"
	"petstore/testkit/apptest"
)

// logEntry is a row of PocketBase's request log (the dashboard's Logs).
type logEntry struct {
	URL    string `json:"url"`
	Status int    `json:"status"`
	Error  string `json:"error"`
	raw    string
}

// waitForLogs returns the request log's /v1 entries once at least n are
// written. PocketBase writes log entries in batches, every 3 seconds, after
// the response has gone out.
func waitForLogs(t *testing.T, s *apptest.Server, n int) []logEntry {
	t.Helper()
	var entries []logEntry
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var rows []struct {
			Data string `db:"data"`
		}
		err := s.App.AuxDB().Select("data").From("_logs").
			Where(dbx.NewExp("json_extract(data, '$.url') LIKE '/v1/%'")).All(&rows)
		if err != nil {
			t.Fatal(err)
		}
		entries = entries[:0]
		for _, row := range rows {
			e := logEntry{raw: row.Data}
			if err := json.Unmarshal([]byte(row.Data), &e); err != nil {
				t.Fatal(err)
			}
			entries = append(entries, e)
		}
		if len(entries) >= n {
			return entries
		}
	}
	t.Fatalf("%d /v1 requests in the log after 30 s, want %d", len(entries), n)
	return nil
}

// The request log records the status each /v1 answer was sent with, errors
// included, and the error behind it.
func TestRequestLogRecordsStatusSent(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "free"})
	want := map[string]int{
		"/v1/pets?limit=1":         http.StatusOK,
		"/v1/pets?limit=0":         http.StatusBadRequest,
		"/v1/pets/123456789012345": http.StatusNotFound,
		"/v1/nowhere":              http.StatusNotFound,
		"/v1/pets?limit=2&limit=3": http.StatusBadRequest,
		"/v1//pets?limit=1":        http.StatusNotFound, // logged as sent, not as routed
		"/v1/pets/../pets":         http.StatusNotFound,
	}
	for path, status := range want {
		if r := s.Do(t, http.MethodGet, path, key, nil); r.StatusCode != status {
			t.Fatalf("%s: %d, want %d", path, r.StatusCode, status)
		}
	}
	if r := s.Do(t, http.MethodGet, "/v1/pets?limit=5", "", nil); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no key: %d", r.StatusCode)
	}
	want["/v1/pets?limit=5"] = http.StatusUnauthorized

	for _, e := range waitForLogs(t, s, len(want)) {
		status, ok := want[e.URL]
		if !ok {
			t.Fatalf("unexpected log entry %s", e.raw)
		}
		if e.Status != status {
			t.Errorf("log of %s: status %d, want %d", e.URL, e.Status, status)
		}
		if status >= 400 && e.Error == "" {
			t.Errorf("log of %s: no error recorded", e.URL)
		}
	}
}

// With --request-log errors, successes stay out of the log, /v1's and
// PocketBase's alike, and errors do not.
func TestRequestLogErrorsOnly(t *testing.T) {
	apptest.Slow(t)
	s := apptest.StartWith(t, apptest.Config{RequestLog: requestlog.Errors})
	key := s.NewKey(t, apikeys.NewKey{Plan: "free"})
	if r := s.Do(t, http.MethodGet, "/v1/pets?limit=1", key, nil); r.StatusCode != http.StatusOK {
		t.Fatalf("list: %d", r.StatusCode)
	}
	if r := s.Do(t, http.MethodGet, "/v1/pets?limit=0", key, nil); r.StatusCode != http.StatusBadRequest {
		t.Fatalf("limit=0: %d", r.StatusCode)
	}
	for _, path := range []string{"/api/health?from=TestRequestLogErrorsOnly", "/api/collections/nothing/records?from=TestRequestLogErrorsOnly"} {
		resp, err := http.Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	entries := waitForLogs(t, s, 1)
	if len(entries) != 1 || entries[0].URL != "/v1/pets?limit=0" || entries[0].Status != http.StatusBadRequest {
		t.Fatalf("/v1 log entries %+v, want the 400 only", entries)
	}
	count := func(url string) int {
		var n int
		err := s.App.AuxDB().Select("count(*)").From("_logs").
			Where(dbx.NewExp("json_extract(data, '$.url') = {:url}", dbx.Params{"url": url})).Row(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for deadline := time.Now().Add(30 * time.Second); count("/api/collections/nothing/records?from=TestRequestLogErrorsOnly") != 1; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no log entry of the records API's 404")
		}
	}
	if n := count("/api/health?from=TestRequestLogErrorsOnly"); n != 0 {
		t.Fatalf("%d log entries of /api/health's 200, want none", n)
	}
}

// A /v1 entry's data, field by field, as Settings → Logs asks: the client's
// IPs only when they are to be logged; no auth record, even when auth ids are
// to be logged (/v1 does not load PocketBase's auth tokens: a bearer token
// there is an API key).
func TestRequestLogEntryData(t *testing.T) {
	for _, logIPs := range []bool{true, false} {
		s := apptest.Start(t, "")
		// Set before any request: PocketBase reads its settings without a lock.
		s.App.Settings().Logs.LogIP = logIPs
		s.App.Settings().Logs.LogAuthId = true
		s.App.Settings().TrustedProxy.Headers = []string{"X-Forwarded-For"}
		key := s.NewKey(t, apikeys.NewKey{Plan: "free"})
		token := s.SuperuserToken(t, "staff@example.com", "1234567890")
		send := func(path, credential string) {
			t.Helper()
			s.Do(t, http.MethodGet, path, credential, nil, "User-Agent", "petstore-test/1",
				"Referer", "https://shop.example/list?a=1&b=<2>", "X-Forwarded-For", "203.0.113.9")
		}
		send("/v1/pets/123456789012345", key)
		send("/v1/pets?limit=1", token)
		send("/v1/pets?limit=2", key)

		common := map[string]any{"type": "request", "method": "GET", "auth": "",
			"referer": "https://shop.example/list?a=1&b=<2>", "userAgent": "petstore-test/1"}
		if logIPs {
			common["userIP"], common["remoteIP"] = "203.0.113.9", "127.0.0.1"
		}
		want := map[string]map[string]any{
			"/v1/pets/123456789012345": {"status": 404.0, "error": "not_found: No pet with id 123456789012345."},
			"/v1/pets?limit=1":         {"status": 401.0, "error": "unauthorized: The API key is invalid, revoked or expired."},
			"/v1/pets?limit=2":         {"status": 200.0},
		}
		for url, fields := range want {
			fields["url"] = url
			maps.Copy(fields, common)
		}

		for _, e := range waitForLogs(t, s, len(want)) {
			var got map[string]any
			if err := json.Unmarshal([]byte(e.raw), &got); err != nil {
				t.Fatal(err)
			}
			if ms, ok := got["execTime"].(float64); !ok || ms <= 0 {
				t.Errorf("log of %s: execTime %v", e.URL, got["execTime"])
			}
			delete(got, "execTime")
			fields, ok := want[e.URL]
			if !ok {
				t.Fatalf("unexpected log entry %s", e.raw)
			}
			for k, v := range fields {
				if got[k] != v {
					t.Errorf("LogIP %v, log of %s: %s is %#v, want %#v", logIPs, e.URL, k, got[k], v)
				}
			}
			for k, v := range got {
				if _, ok := fields[k]; !ok {
					t.Errorf("LogIP %v, log of %s: unexpected %s %#v", logIPs, e.URL, k, v)
				}
			}
		}
	}
}

// By default (--request-log bounded) the log writes every error, and of the
// successes at most requestlog.SuccessesPerSecond a second, with one row a
// second that counts the others: every request is in the log, one by one or
// counted, and the busiest second holds the bound's rows of successes.
func TestRequestLogBoundsSuccesses(t *testing.T) {
	apptest.Slow(t)
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Name: "busy", Plan: "enterprise", PerMinute: 1_000_000, PerDay: 1_000_000})

	// Send until one second of the client's clock saw twice the bound, or
	// 20 s passed; a few errors go along.
	const errors = 5
	var successes int64
	var mu sync.Mutex
	perSecond := map[int64]int{}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 25 {
					if r := s.Do(t, http.MethodGet, "/v1/pets?limit=1", key, nil); r.StatusCode != http.StatusOK {
						t.Errorf("list: %d", r.StatusCode)
						return
					}
					mu.Lock()
					successes++
					perSecond[time.Now().Unix()]++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if slices.Max(slices.Collect(maps.Values(perSecond))) >= 2*requestlog.SuccessesPerSecond {
			break
		}
	}
	for range errors {
		if r := s.Do(t, http.MethodGet, "/v1/pets?limit=0", key, nil); r.StatusCode != http.StatusBadRequest {
			t.Fatalf("limit=0: %d", r.StatusCode)
		}
	}

	type countRow struct {
		Count  int64  `json:"count"`
		Second string `json:"second"`
	}
	var rows int64
	var counted []countRow
	var failures int
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		entries := waitForLogs(t, s, 1)
		rows, failures = 0, 0
		for _, e := range entries {
			if e.Status == http.StatusBadRequest {
				failures++
			} else {
				rows++
			}
		}
		var data []string
		if err := s.App.AuxDB().Select("data").From("_logs").
			Where(dbx.NewExp("json_extract(data, '$.type') = 'requestlog' AND json_extract(data, '$.second') IS NOT NULL")).
			Column(&data); err != nil {
			t.Fatal(err)
		}
		counted = counted[:0]
		var n int64
		for _, d := range data {
			var c countRow
			if err := json.Unmarshal([]byte(d), &c); err != nil {
				t.Fatal(err)
			}
			counted = append(counted, c)
			n += c.Count
		}
		if rows+n == successes && failures == errors {
			break
		}
	}
	var n int64
	for _, c := range counted {
		n += c.Count
	}
	if rows+n != successes || failures != errors || len(counted) == 0 {
		t.Fatalf("%d successes sent: %d rows of their own and %d counted in %d rows; %d of %d errors logged",
			successes, rows, n, len(counted), failures, errors)
	}
	if max := int64(requestlog.SuccessesPerSecond) * int64(len(perSecond)+1); rows > max {
		t.Errorf("%d rows of successes over %d seconds, want at most %d", rows, len(perSecond), max)
	}
}
