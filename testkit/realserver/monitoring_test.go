package realserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPrometheusReadsTheKit runs Debian's prometheus with the kit's scrape
// example (deploy/monitoring/prometheus.yml: its targets pointed at the
// binary's --metrics-addr and at a Litestream that is not running, its
// intervals at a second) and its rules, against the binary serving /v1: the
// recording rules give series for job petstore, and the alerts that this
// set-up must raise are pending (no backup yet; Litestream down) while
// PetstoreDown is not.
func TestPrometheusReadsTheKit(t *testing.T) {
	requireTool(t, "prometheus")
	rules := deployPath(t, "monitoring", "rules.yml")
	dir := t.TempDir()
	key, _ := createKey(t, dir, "--plan", "business")
	metricsAddr := freeAddr(t)
	p := start(t, dir, "--metrics-addr", metricsAddr)

	config := readDeployFile(t, filepath.Join("monitoring", "prometheus.yml"))
	config = replaceOnce(t, config, "scrape_interval: 15s", "scrape_interval: 1s")
	config = replaceOnce(t, config, "evaluation_interval: 15s", "evaluation_interval: 1s")
	config = replaceOnce(t, config, "  - rules.yml", "  - "+rules)
	config = replaceOnce(t, config, "- 127.0.0.1:9090", "- "+metricsAddr)
	config = replaceOnce(t, config, "- 127.0.0.1:9091", "- "+freeAddr(t))
	configFile := filepath.Join(t.TempDir(), "prometheus.yml")
	if err := os.WriteFile(configFile, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	listen := freeAddr(t)
	cmd := exec.Command("prometheus", "--config.file", configFile, "--storage.tsdb.path", t.TempDir(),
		"--web.listen-address", listen)
	var output strings.Builder
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus:\n%s", output.String())
		}
	})

	ctx := context.Background()
	stop := time.Now().Add(30 * time.Second)
	var series map[string]bool
	var alerts map[string]string
	for time.Now().Before(stop) {
		for range 5 {
			if status, body, err := p.Do(ctx, http.MethodGet, "/v1/pets", key, nil); err != nil || status != http.StatusOK {
				t.Fatalf("GET /v1/pets: %d %v %s", status, err, body)
			}
		}
		series = map[string]bool{}
		for _, record := range []string{"petstore:http_server_requests:rate5m", "petstore:http_server_request_duration_seconds:p99_rate5m",
			"petstore:http_server_5xx:ratio_rate5m", "petstore:ratelimit_429:ratio_rate5m", "up"} {
			for _, s := range promQuery(listen, record) {
				series[record+"{job="+s.Metric["job"]+",http_route="+s.Metric["http_route"]+",plan="+s.Metric["plan"]+"}"] = true
			}
		}
		alerts = promAlerts(listen)
		if series["petstore:http_server_requests:rate5m{job=petstore,http_route=/v1/pets,plan=}"] &&
			series["petstore:http_server_5xx:ratio_rate5m{job=petstore,http_route=,plan=}"] &&
			series["petstore:http_server_request_duration_seconds:p99_rate5m{job=petstore,http_route=/v1/pets,plan=}"] &&
			series["petstore:ratelimit_429:ratio_rate5m{job=petstore,http_route=,plan=business}"] &&
			alerts["PetstoreNoRecentBackup"] != "" && alerts["LitestreamDown"] != "" {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, want := range []string{
		"petstore:http_server_requests:rate5m{job=petstore,http_route=/v1/pets,plan=}",
		"petstore:http_server_request_duration_seconds:p99_rate5m{job=petstore,http_route=/v1/pets,plan=}",
		"petstore:http_server_5xx:ratio_rate5m{job=petstore,http_route=,plan=}",
		"petstore:ratelimit_429:ratio_rate5m{job=petstore,http_route=,plan=business}",
		"up{job=petstore,http_route=,plan=}",
		"up{job=litestream,http_route=,plan=}",
	} {
		if !series[want] {
			t.Errorf("Prometheus has no %s (has %v)", want, series)
		}
	}
	for name, state := range map[string]string{"PetstoreNoRecentBackup": "pending", "LitestreamDown": "pending", "PetstoreDown": ""} {
		if alerts[name] != state {
			t.Errorf("alert %s: %q, want %q (alerts: %v)", name, alerts[name], state, alerts)
		}
	}
}

// promSample is one series of an instant query's answer.
type promSample struct {
	Metric map[string]string
}

// promQuery asks the Prometheus on addr for query's series now; none while
// it starts.
func promQuery(addr, query string) []promSample {
	var answer struct {
		Data struct{ Result []promSample }
	}
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if json.NewDecoder(resp.Body).Decode(&answer) != nil {
		return nil
	}
	return answer.Data.Result
}

// promAlerts is the state (pending, firing) of each alert of the Prometheus
// on addr that is active.
func promAlerts(addr string) map[string]string {
	var answer struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string
				State  string
			}
		}
	}
	alerts := map[string]string{}
	resp, err := http.Get("http://" + addr + "/api/v1/alerts")
	if err != nil {
		return alerts
	}
	defer resp.Body.Close()
	if json.NewDecoder(resp.Body).Decode(&answer) != nil {
		return alerts
	}
	for _, a := range answer.Data.Alerts {
		alerts[a.Labels["alertname"]] = a.State
	}
	return alerts
}
