package metrics_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
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

// The dashboard's backup age panel, evaluated by promtool, draws no line for
// an instance without a backup (petstore_backup_last_success_timestamp_seconds
// 0), where time() minus 0 would read as decades, and the age for one with a
// backup.
func TestBackupAgePanelSkipsNoBackup(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is not installed")
		}
		t.Skip("promtool is not installed")
	}
	var expr string
	for _, p := range dashboardPanels(t) {
		if p.Title == "Age of the newest backup" && len(p.Targets) == 1 {
			expr = p.Targets[0].Expr
		}
	}
	if expr == "" {
		t.Fatal(`the dashboard has no panel "Age of the newest backup" with one query`)
	}
	expr = strings.NewReplacer(`"$job"`, `".+"`, `"$instance"`, `".+"`).Replace(expr)
	quoted, err := json.Marshal(expr) // a JSON string is a YAML string
	if err != nil {
		t.Fatal(err)
	}
	const series = `petstore_backup_last_success_timestamp_seconds`
	cases := `tests:
  - interval: 1m
    input_series:
      - series: '` + series + `{job="petstore",instance="none"}'
        values: '0x10'
      - series: '` + series + `{job="petstore",instance="one"}'
        values: '300x10'
    promql_expr_test:
      - expr: ` + string(quoted) + `
        eval_time: 10m
        exp_samples:
          - labels: '{job="petstore",instance="one"}'
            value: 300
`
	file := filepath.Join(t.TempDir(), "panel_test.yml")
	if err := os.WriteFile(file, []byte(cases), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "test", "rules", file).CombinedOutput(); err != nil {
		t.Errorf("the backup age panel's query %s: %v\n%s", expr, err, out)
	}
}
