package metrics_test

import (
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"petstore/internal/metrics"
)

// The plan label holds the first MaxPlanLabels plans seen, and folds the
// later ones into "other", in both counters by plan.
func TestPlanLabelsAreBounded(t *testing.T) {
	m := metrics.New(metrics.Known{})
	for i := range metrics.MaxPlanLabels + 5 {
		plan := fmt.Sprintf("plan%02d", i)
		m.ObservePlanRequest(plan, "served")
		m.ObservePlanRequest(plan, "served")
		m.ObserveUsageThreshold(plan, 80)
	}
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(w.Body)
	var requests, crossings []string
	for _, line := range strings.Split(string(body), "\n") {
		switch {
		case strings.HasPrefix(line, "petstore_api_requests_by_plan_total{"):
			requests = append(requests, line)
		case strings.HasPrefix(line, "petstore_usage_threshold_events_total{"):
			crossings = append(crossings, line)
		}
	}
	if len(requests) != metrics.MaxPlanLabels+1 || len(crossings) != metrics.MaxPlanLabels+1 {
		t.Fatalf("%d and %d series, want %d each:\n%s\n%s", len(requests), len(crossings), metrics.MaxPlanLabels+1,
			strings.Join(requests, "\n"), strings.Join(crossings, "\n"))
	}
	for _, want := range []string{
		`petstore_api_requests_by_plan_total{outcome="served",plan="other"} 10`,
		`petstore_api_requests_by_plan_total{outcome="served",plan="plan00"} 2`,
		`petstore_usage_threshold_events_total{plan="other",threshold="80"} 5`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("no %s", want)
		}
	}
}

// BenchmarkObservePlanRequest is what counting a key's request by plan and
// outcome costs each request.
func BenchmarkObservePlanRequest(b *testing.B) {
	m := metrics.New(metrics.Known{})
	for b.Loop() {
		m.ObservePlanRequest("pro", "served")
	}
}
