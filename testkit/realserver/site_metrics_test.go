package realserver_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestPocketBaseRoutesAreMeasured: answers outside /v1 (PocketBase's API,
// its backups, the dashboard, the pages) are counted in
// http_server_request_duration_seconds under the pattern that served them,
// their errors with the status sent; 40 made-up paths add no label value
// beyond the patterns that served them; /v1 is counted once.
func TestPocketBaseRoutesAreMeasured(t *testing.T) {
	metricsAddr := freeAddr(t)
	_, p := serveBinary(t, "--metrics-addr", metricsAddr)
	token := superuserToken(t, p)
	do := func(method, path, key string) int {
		t.Helper()
		status, body, err := p.Do(context.Background(), method, path, key, nil)
		if err != nil {
			t.Fatalf("%s %s: %v %s", method, path, err, body)
		}
		return status
	}
	want := map[string]int{} // "method route status" → count
	count := func(method, path, key, route string) {
		t.Helper()
		want[fmt.Sprintf("%s %s %d", method, route, do(method, path, key))]++
	}
	count("GET", "/api/health", "", "/api/health")
	count("GET", "/api/collections/plans/records", token, "/api/collections/{collection}/records")
	count("GET", "/api/collections/no_such/records", token, "/api/collections/{collection}/records")
	count("GET", "/api/collections/plans/records", "", "/api/collections/{collection}/records")
	count("GET", "/api/backups", token, "/api/backups")
	count("GET", "/api/settings", "", "/api/settings")
	count("GET", "/_/", "", "/_/{path...}")
	count("GET", "/healthz", "", "/healthz")
	for i := range 40 {
		do("GET", fmt.Sprintf("/made-up/%d/x", i), "")
		do("GET", fmt.Sprintf("/api/made-up-%d", i), "")
	}
	do("GET", "/v1/pets", "")

	seen := map[string]int{}
	routes := map[string]bool{}
	for _, m := range scrape(t, metricsAddr)["http_server_request_duration_seconds"].GetMetric() {
		var method, route, status string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "http_request_method":
				method = l.GetValue()
			case "http_route":
				route = l.GetValue()
			case "http_response_status_code":
				status = l.GetValue()
			}
		}
		routes[route] = true
		seen[method+" "+route+" "+status] = int(m.GetHistogram().GetSampleCount())
	}
	for k, n := range want {
		if seen[k] < n {
			t.Errorf("%s counted %d times, want at least %d (seen: %v)", k, seen[k], n, seen)
		}
	}
	if seen["GET /v1/pets 401"] != 1 {
		t.Errorf("GET /v1/pets 401 counted %d times, want once", seen["GET /v1/pets 401"])
	}
	var names []string
	for r := range routes {
		names = append(names, r)
		if strings.Contains(r, "made-up") {
			t.Errorf("a client's path became a route label: %q", r)
		}
	}
	slices.Sort(names)
	if len(routes) > 16 {
		t.Errorf("%d route labels after 80 made-up paths, want the patterns alone: %q", len(routes), names)
	}
	t.Logf("route labels: %q", names)
}
