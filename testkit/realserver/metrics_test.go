package realserver_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"petstore/internal/audit"
)

// TestMetricsCountEveryAnswer sends a known mix of /v1 requests to the
// binary started with --metrics-addr, scrapes /metrics there with
// Prometheus' own parser, and finds each answer counted by route and
// status, each rate-limit decision by plan and outcome, the build's
// information, and no label value a client chose. /metrics is not on the
// public listener.
func TestMetricsCountEveryAnswer(t *testing.T) {
	dir := t.TempDir()
	business, _ := createKey(t, dir, "--plan", "business")
	free, freeID := createKey(t, dir, "--plan", "free", "--per-minute", "2")
	metricsAddr := freeAddr(t)
	p := start(t, dir, "--metrics-addr", metricsAddr)
	ctx := context.Background()

	send := func(n int, method, path, key string, want int) {
		t.Helper()
		for range n {
			status, body, err := p.Do(ctx, method, path, key, nil)
			if err != nil || status != want {
				t.Fatalf("%s %s: %d %v %s, want %d", method, path, status, err, body, want)
			}
		}
	}
	send(3, http.MethodGet, "/v1/pets", business, 200)
	send(2, http.MethodGet, "/v1/pets", "", 401)
	send(1, http.MethodGet, "/v1/pets/100000000000000", business, 404)
	send(1, http.MethodDelete, "/v1/pets", business, 405)
	send(1, http.MethodGet, "/v1/no-such-thing", business, 404)
	send(2, http.MethodGet, "/v1/pets", free, 200)
	send(1, http.MethodGet, "/v1/pets", free, 429)
	// Creates: two plain ones, and an Idempotency-Key stored, replayed and
	// reused with another body.
	create := func(body string, want int, header ...string) {
		t.Helper()
		resp, data, err := p.Exchange(ctx, http.MethodPost, "/v1/pets", business, []byte(body),
			append([]string{"Content-Type", "application/json"}, header...)...)
		if err != nil || resp.StatusCode != want {
			t.Fatalf("create %s %v: %v %s, want %d", body, header, err, data, want)
		}
	}
	create(`{"name":"Rex","categoryId":1}`, 201)
	create(`{"name":"Tom","categoryId":2}`, 201)
	create(`{"name":"Kit","categoryId":3}`, 201, "Idempotency-Key", "k-1")
	create(`{"name":"Kit","categoryId":3}`, 201, "Idempotency-Key", "k-1")
	create(`{"name":"Other","categoryId":3}`, 422, "Idempotency-Key", "k-1")

	if status, _, _ := p.Do(ctx, http.MethodGet, "/metrics", "", nil); status != http.StatusNotFound {
		t.Errorf("/metrics on the public listener: %d, want 404", status)
	}
	families := scrape(t, metricsAddr)

	requests := map[string]uint64{}
	for _, m := range families["http_server_request_duration_seconds"].GetMetric() {
		requests[labelsOf(m)] = m.GetHistogram().GetSampleCount()
	}
	for labels, want := range map[string]uint64{
		"http_request_method=GET,http_response_status_code=200,http_route=/v1/pets":         5,
		"http_request_method=GET,http_response_status_code=401,http_route=/v1/pets":         2,
		"http_request_method=GET,http_response_status_code=429,http_route=/v1/pets":         1,
		"http_request_method=GET,http_response_status_code=404,http_route=/v1/pets/{petId}": 1,
		"http_request_method=DELETE,http_response_status_code=405,http_route=/v1/pets":      1,
		"http_request_method=GET,http_response_status_code=404,http_route=other":            1,
		"http_request_method=POST,http_response_status_code=201,http_route=/v1/pets":        4,
		"http_request_method=POST,http_response_status_code=422,http_route=/v1/pets":        1,
	} {
		if requests[labels] != want {
			t.Errorf("http_server_request_duration_seconds{%s}: %d, want %d (all: %v)", labels, requests[labels], want, requests)
		}
	}
	decisions := map[string]float64{}
	for _, m := range families["petstore_ratelimit_requests_total"].GetMetric() {
		decisions[labelsOf(m)] = m.GetCounter().GetValue()
	}
	for labels, want := range map[string]float64{
		"outcome=admitted,plan=business":  11,
		"outcome=admitted,plan=anonymous": 2,
		"outcome=admitted,plan=free":      2,
		"outcome=limited,plan=free":       1,
	} {
		if decisions[labels] != want {
			t.Errorf("petstore_ratelimit_requests_total{%s}: %v, want %v (all: %v)", labels, decisions[labels], want, decisions)
		}
	}
	idempotency := map[string]float64{}
	for _, m := range families["petstore_idempotency_requests_total"].GetMetric() {
		idempotency[labelsOf(m)] = m.GetCounter().GetValue()
	}
	if want := map[string]float64{"outcome=stored": 1, "outcome=replayed": 1, "outcome=conflict": 1}; !maps.Equal(idempotency, want) {
		t.Errorf("petstore_idempotency_requests_total: %v, want %v", idempotency, want)
	}
	// Every create ran in a committed transaction of the writer, the
	// replayed and the refused ones too: they read in it.
	if batches := families["petstore_pets_writer_batch_size"].GetMetric(); len(batches) != 1 ||
		batches[0].GetHistogram().GetSampleSum() != 5 || batches[0].GetHistogram().GetSampleCount() == 0 {
		t.Errorf("petstore_pets_writer_batch_size: %v, want a sum of 5", batches)
	}
	if commits := families["petstore_pets_writer_commit_duration_seconds"].GetMetric(); len(commits) != 1 ||
		commits[0].GetHistogram().GetSampleCount() != families["petstore_pets_writer_batch_size"].GetMetric()[0].GetHistogram().GetSampleCount() {
		t.Errorf("petstore_pets_writer_commit_duration_seconds: %v, one per commit", commits)
	}
	// The request log wrote a row per request but the second keyless 401 of
	// the minute, counted in the first's row (written when the minute ends);
	// if a minute began between the two, both have rows of their own. The
	// writer gathers for a moment: wait for it.
	const sent = 16
	var rows, counted float64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		f := scrape(t, metricsAddr)
		rows = f["petstore_requestlog_rows_total"].GetMetric()[0].GetCounter().GetValue()
		for _, m := range f["petstore_requestlog_dropped_total"].GetMetric() {
			if labelsOf(m) == "reason=coalesced" {
				counted = m.GetCounter().GetValue()
			}
		}
		if rows+counted >= sent {
			break
		}
	}
	if !(counted == 1 && (rows == sent-1 || rows == sent)) && !(counted == 0 && rows == sent) {
		t.Errorf("petstore_requestlog_rows_total %v, dropped{reason=coalesced} %v; want %d rows and 1, or %d and 0", rows, counted, sent-1, sent)
	}
	build := families["petstore_build_info"].GetMetric()
	if len(build) != 1 || build[0].GetGauge().GetValue() != 1 || !strings.Contains(labelsOf(build[0]), "goversion=go1.") {
		t.Errorf("petstore_build_info: %v", build)
	}
	for _, name := range []string{"petstore_pets", "petstore_categories", "petstore_categories_unnamed", "petstore_customers", "petstore_api_keys", "petstore_sqlite_file_bytes", "go_goroutines", "process_resident_memory_bytes"} {
		if len(families[name].GetMetric()) == 0 {
			t.Errorf("no %s", name)
		}
	}
	for _, m := range families["petstore_api_keys"].GetMetric() {
		if labelsOf(m) == "state=active" && m.GetGauge().GetValue() != 2 {
			t.Errorf("petstore_api_keys{state=active}: %v, want 2", m.GetGauge().GetValue())
		}
	}
	// No label carries a key, a key's id, a pet id or a client's path.
	for name, f := range families {
		for _, m := range f.GetMetric() {
			labels := labelsOf(m)
			for _, secret := range []string{business[:12], free[:12], freeID, "100000000000000", "no-such-thing"} {
				if strings.Contains(labels, secret) {
					t.Errorf("%s{%s} holds %q", name, labels, secret)
				}
			}
		}
	}
}

// TestMetricsStartAtZero scrapes a fresh server's /metrics and finds every
// known series of the labelled counters at 0 before their first event (the
// rate limiter's outcomes for keyless requests, the Idempotency-Key outcomes,
// the webhook attempts' outcomes, every audit action), and
// petstore_backup_last_success_timestamp_seconds at 0 without a backup; after
// a backup through PocketBase's API, the backup's time and its audit record
// counted.
func TestMetricsStartAtZero(t *testing.T) {
	metricsAddr := freeAddr(t)
	_, p := serveBinary(t, "--metrics-addr", metricsAddr)
	families := scrape(t, metricsAddr)

	want := map[string][]string{
		"petstore_ratelimit_requests_total":   {"outcome=admitted,plan=anonymous", "outcome=banned,plan=anonymous", "outcome=limited,plan=anonymous"},
		"petstore_idempotency_requests_total": {"outcome=conflict", "outcome=replayed", "outcome=stored"},
		"petstore_webhook_deliveries_total":   {"outcome=delivered", "outcome=failed", "outcome=retried"},
	}
	for _, action := range audit.Actions {
		want["petstore_audit_events_total"] = append(want["petstore_audit_events_total"], "action="+string(action))
	}
	for name, labels := range want {
		var got []string
		for _, m := range families[name].GetMetric() {
			got = append(got, labelsOf(m))
			if v := m.GetCounter().GetValue(); v != 0 {
				t.Errorf("%s{%s} is %v on a fresh start", name, labelsOf(m), v)
			}
		}
		slices.Sort(got)
		slices.Sort(labels)
		if !slices.Equal(got, labels) {
			t.Errorf("%s: %v, want %v", name, got, labels)
		}
	}
	backupTime := func(families map[string]*dto.MetricFamily) float64 {
		t.Helper()
		m := families["petstore_backup_last_success_timestamp_seconds"].GetMetric()
		if len(m) != 1 {
			t.Fatalf("petstore_backup_last_success_timestamp_seconds: %v, want one series", m)
		}
		return m[0].GetGauge().GetValue()
	}
	if v := backupTime(families); v != 0 {
		t.Errorf("petstore_backup_last_success_timestamp_seconds without a backup: %v, want 0", v)
	}

	before := time.Now().Truncate(time.Second)
	staff := staffClient(t, p)
	if status, body := staff(http.MethodPost, "/api/backups", []byte(`{"name":"daily.zip"}`), "application/json"); status != http.StatusNoContent {
		t.Fatalf("backup: %d %s", status, body)
	}
	after := time.Now()
	families = scrape(t, metricsAddr)
	if v := backupTime(families); v < float64(before.Unix()) || v > float64(after.UnixMilli())/1000 {
		t.Errorf("petstore_backup_last_success_timestamp_seconds after a backup made between %v and %v: %v",
			before.Unix(), after.Unix(), v)
	}
	created := -1.0
	for _, m := range families["petstore_audit_events_total"].GetMetric() {
		if labelsOf(m) == "action=backup.created" {
			created = m.GetCounter().GetValue()
		}
	}
	if created != 1 {
		t.Errorf("petstore_audit_events_total{action=backup.created} after a backup: %v, want 1", created)
	}
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// scrape reads /metrics at addr with Prometheus' own parser.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return families
}

// labelsOf is a metric's labels as name=value pairs, sorted by name.
func labelsOf(m *dto.Metric) string {
	pairs := make([]string, 0, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		pairs = append(pairs, fmt.Sprintf("%s=%s", l.GetName(), l.GetValue()))
	}
	return strings.Join(pairs, ",")
}

// TestDataVersionIsReadAfterCommitsOnly: /v1's requests take the data
// version from SQLite's WAL index header and read the database only after
// the header moved (petstore_data_version_reads_total); after a create, the
// next request reads it. The service's own writers (the usage history's
// flush, the key's last use) commit while requests come, as often as the
// clock and the machine's load make them: the test counts their commits in
// the header, and bounds the reads by them, not by the time taken.
func TestDataVersionIsReadAfterCommitsOnly(t *testing.T) {
	dir := t.TempDir()
	key, _ := createKey(t, dir, "--plan", "business")
	metricsAddr := freeAddr(t)
	p := start(t, dir, "--metrics-addr", metricsAddr)
	ctx := context.Background()
	reads := func() float64 {
		t.Helper()
		f := scrape(t, metricsAddr)["petstore_data_version_reads_total"].GetMetric()
		if len(f) != 1 {
			t.Fatalf("petstore_data_version_reads_total: %v", f)
		}
		return f[0].GetCounter().GetValue()
	}
	list := func(n int) {
		t.Helper()
		for range n {
			if status, body, err := p.Do(ctx, http.MethodGet, "/v1/pets", key, nil); err != nil || status != http.StatusOK {
				t.Fatalf("listPets: %d %v %s", status, err, body)
			}
		}
	}
	list(1)
	before, commits := reads(), walCommits(t, dir)
	list(200)
	committed := walCommits(t, dir) - commits
	// A commit moves the header at most twice: a write that finds the WAL
	// all copied into the database (the checkpointer's work) starts it over
	// first. Each move is read at most once, and the first request may read
	// one made before the count began.
	if n, most := reads()-before, float64(2*committed+1); n > most {
		t.Fatalf("200 requests read the data version %v times, want at most %v (the service committed %d times meanwhile)", n, most, committed)
	}
	before = reads()
	if resp, body, err := p.Exchange(ctx, http.MethodPost, "/v1/pets", key, []byte(`{"name":"Rex","categoryId":1}`), "Content-Type", "application/json"); err != nil || resp.StatusCode != http.StatusCreated {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("createPet: %d %v %s", status, err, body)
	}
	list(1)
	if n := reads() - before; n < 1 {
		t.Fatal("a request after a create did not read the data version")
	}
}

// walCommits is the count of commits to data.db in dir that its WAL index
// header holds (iChange, in the host's byte order:
// https://sqlite.org/walformat.html#the_wal_index_file_format). The test's
// process holds no SQLite connection to the file, so opening and closing
// it releases no lock of SQLite's.
func walCommits(t *testing.T, dir string) uint32 {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "data.db-shm"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [12]byte
	if _, err := f.ReadAt(b[:], 0); err != nil {
		t.Fatal(err)
	}
	return binary.NativeEndian.Uint32(b[8:])
}
