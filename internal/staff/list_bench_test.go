package staff_test

import (
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"petstore/internal/apikeys"
	"petstore/testkit/apptest"
)

// BenchmarkListKeys measures the staff page's list call, GET
// /api/petstore/keys, over loopback with 10,000 keys, each used today
// (apptest.SeedKeys): the first page, a deep page, searches and filters,
// side by side. The staff page stays usable while each stays well under
// 100 ms.
//
//	go test -run '^$' -bench ListKeys -benchtime 50x ./internal/staff/
func BenchmarkListKeys(b *testing.B) {
	const keys = 10_000
	s := apptest.Start(b, "")
	token := s.SuperuserToken(b, "staff@example.com", "a long enough password")
	whole := s.SeedKeys(b, keys, "shop")[keys/2]

	client := &http.Client{} // not the harness's, which checks /v1 exchanges and would be measured too
	for _, c := range []struct{ name, query string }{
		{"first-page", ""},
		{"deep-page-by-name", "sort=name&page=150"},
		{"last-used", "sort=-lastUsed"},
		{"search-name", "search=" + url.QueryEscape("shop 12")},
		{"search-whole-key", "search=" + url.QueryEscape(whole)},
		{"search-prefix", "search=" + url.QueryEscape(apikeys.DisplayPrefix(whole)+"…")},
		{"state-banned", "state=banned"},
		{"state-active-by-expiry", "state=active&sort=expires&perPage=100"},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodGet, s.URL+"/api/petstore/keys?"+c.query, nil)
				req.Header.Set("Authorization", token)
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("%s: %d", c.query, resp.StatusCode)
				}
			}
		})
	}
}

// BenchmarkExportOneKey measures the export of one key's day, GET
// /api/petstore/usage.csv?key=, over loopback with 10,000 keys used today
// stored (apptest.SeedKeys): the export reads that key alone.
//
//	go test -run '^$' -bench ExportOneKey -benchtime 50x ./internal/staff/
func BenchmarkExportOneKey(b *testing.B) {
	s := apptest.Start(b, "")
	token := s.SuperuserToken(b, "staff@example.com", "a long enough password")
	s.SeedKeys(b, 10_000, "shop")
	query := "from=" + time.Now().UTC().Format(time.DateOnly) + "&to=" + time.Now().UTC().Format(time.DateOnly) + "&key=seed00000005000"
	client := &http.Client{}
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/api/petstore/usage.csv?"+query, nil)
		req.Header.Set("Authorization", token)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: %d", query, resp.StatusCode)
		}
	}
}
