package metrics_test

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"
)

// documented are the metric names package metrics' comment lists, with the
// series a histogram adds.
func documented(t *testing.T) map[string]bool {
	t.Helper()
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^//\t([a-z_]+)\s+(counter|gauge|histogram)`).FindAllStringSubmatch(string(src), -1) {
		names[m[1]] = true
		if m[2] == "histogram" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[m[1]+s] = true
			}
		}
	}
	if len(names) < 10 {
		t.Fatalf("read %d metric names from doc.go: the list's format changed", len(names))
	}
	return names
}

// TestDashboardReadsDocumentedMetrics holds docs/grafana-dashboard.json to
// the names the service exports: every petstore_ or http_server_ series a
// panel queries is in doc.go's list.
func TestDashboardReadsDocumentedMetrics(t *testing.T) {
	names := documented(t)
	data, err := os.ReadFile("../../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dashboard struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(data, &dashboard); err != nil {
		t.Fatal(err)
	}
	series := regexp.MustCompile(`\b(petstore_[a-z_]+|http_server_[a-z_]+)`)
	queried := 0
	for _, p := range dashboard.Panels {
		for _, target := range p.Targets {
			for _, name := range series.FindAllString(target.Expr, -1) {
				queried++
				if !names[name] {
					t.Errorf("panel %q queries %s, which doc.go does not list", p.Title, name)
				}
			}
		}
	}
	if queried == 0 {
		t.Fatal("no panel queries a petstore metric")
	}
}
