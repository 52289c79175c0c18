package metrics_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
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

// dashboardPanels are the panels of deploy/monitoring/grafana-dashboard.json.
func dashboardPanels(t *testing.T) []dashboardPanel {
	t.Helper()
	data, err := os.ReadFile("../../deploy/monitoring/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dashboard struct{ Panels []dashboardPanel }
	if err := json.Unmarshal(data, &dashboard); err != nil {
		t.Fatal(err)
	}
	if len(dashboard.Panels) == 0 {
		t.Fatal("the dashboard has no panels")
	}
	return dashboard.Panels
}

type dashboardPanel struct {
	Title   string
	Targets []struct{ Expr string }
}

// TestDashboardReadsDocumentedMetrics holds the dashboard to the names the
// service exports: every petstore_ or http_server_ series a panel queries is
// in doc.go's list.
func TestDashboardReadsDocumentedMetrics(t *testing.T) {
	names := documented(t)
	series := regexp.MustCompile(`\b(petstore_[a-z_]+|http_server_[a-z_]+)`)
	queried := 0
	for _, p := range dashboardPanels(t) {
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

// TestDashboardSelectsJobAndInstance holds every series a panel reads to the
// dashboard's job and instance variables, so that no panel adds up another
// service's series of the same name (http_server_request_duration_seconds is
// OpenTelemetry's, go_* and process_* every Go service's).
func TestDashboardSelectsJobAndInstance(t *testing.T) {
	selector := regexp.MustCompile(`\b((?:petstore|http_server|go|process)_[a-z_]+)(\{[^}]*\})?`)
	selectors := 0
	for _, p := range dashboardPanels(t) {
		for _, target := range p.Targets {
			for _, m := range selector.FindAllStringSubmatch(target.Expr, -1) {
				selectors++
				if !strings.Contains(m[2], `job=~"$job"`) || !strings.Contains(m[2], `instance=~"$instance"`) {
					t.Errorf("panel %q reads %s%s without job=~\"$job\" and instance=~\"$instance\"", p.Title, m[1], m[2])
				}
			}
		}
	}
	if selectors == 0 {
		t.Fatal("no panel reads a series")
	}
}
