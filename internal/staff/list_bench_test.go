package staff_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/pocketbase/dbx"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/internal/customers"
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
		getOK(b, client, s.URL+"/api/petstore/usage.csv?"+query, token)
	}
}

// getOK gets url as the staff member whose token it is, reads the answer
// and fails b unless it is 200.
func getOK(b *testing.B, client *http.Client, url, token string) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", token)
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("%s: %d", url, resp.StatusCode)
	}
}

// BenchmarkUseOverview measures the staff page's section Use, GET
// /api/petstore/usage/near-limit and /usage/top-customers, over loopback
// with 10,000 keys used today (apptest.SeedKeys) shared by 100 customers:
// one grouped read of the hours each.
//
//	go test -run '^$' -bench UseOverview -benchtime 30x ./internal/staff/
func BenchmarkUseOverview(b *testing.B) {
	s := apptest.Start(b, "")
	token := s.SuperuserToken(b, "staff@example.com", "a long enough password")
	s.SeedKeys(b, 10_000, "shop")
	for i := range 100 {
		name := fmt.Sprintf("customer %d", i)
		plan := "free"
		c, err := customers.Create(s.App, customers.Input{Name: &name, Plan: &plan}, audit.CLI)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.App.DB().NewQuery("UPDATE api_keys SET customer = {:c} WHERE CAST(substr(id, 5) AS INTEGER) % 100 = {:i}").
			Bind(dbx.Params{"c": c.Id, "i": i}).Execute(); err != nil {
			b.Fatal(err)
		}
	}
	client := &http.Client{}
	for _, path := range []string{"/usage/near-limit", "/usage/top-customers"} {
		b.Run(path[len("/usage/"):], func(b *testing.B) {
			for b.Loop() {
				getOK(b, client, s.URL+"/api/petstore"+path, token)
			}
		})
	}
}
