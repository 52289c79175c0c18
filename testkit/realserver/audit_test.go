package realserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/audit"
	"petstore/internal/limits"
)

// TestCLIAndBansAreAudited: the keys command's changes are audited as "cli",
// and a ban the limiter starts as "system", each also a line on the
// server's or the command's console, which names the key's id and never the
// key, and counted in the metrics of the instance that wrote it.
func TestCLIAndBansAreAudited(t *testing.T) {
	dir := t.TempDir()
	key, id := createKey(t, dir, "--plan", "free", "--per-minute", "1")
	metricsAddr := freeAddr(t)
	p := start(t, dir, "--metrics-addr", metricsAddr)
	ctx := context.Background()
	// Over the quota, again and again: the free plan bans a key that keeps
	// sending while refused.
	for range 1 + limits.MinBanAfter {
		p.Do(ctx, http.MethodGet, "/v1/pets", key, nil)
	}
	_, stderr, status := petstore(t, dir, "keys", "revoke", id)
	if status != 0 {
		t.Fatalf("keys revoke: %d %s", status, stderr)
	}
	if !strings.Contains(stderr, "Audit: key.revoked") || !strings.Contains(stderr, id) || strings.Contains(stderr, key) {
		t.Errorf("keys revoke's console: %q; want the audit line with the key's id and without the key", stderr)
	}

	app := core.NewBaseApp(core.BaseAppConfig{DataDir: dir})
	if err := app.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	defer app.ResetBootstrapState()
	var rows []struct {
		Action string `db:"action"`
		Actor  string `db:"actor"`
	}
	if err := app.DB().Select("action", "actor").From(audit.Collection).Where(dbx.HashExp{"key": id}).OrderBy("rowid").All(&rows); err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(rows))
	for i, r := range rows {
		got[i] = r.Action + " by " + r.Actor
	}
	want := "key.created by cli, key.banned by system, key.revoked by cli"
	if strings.Join(got, ", ") != want {
		t.Errorf("audit records: %v, want %s", got, want)
	}
	if out := p.Output(); !strings.Contains(out, "Audit: key.banned") || strings.Contains(out, key) {
		t.Errorf("server console: want the ban's audit line and no key:\n%s", out)
	}
	// The server wrote the ban; the keys command, another process, the rest.
	counted := map[string]float64{}
	for _, m := range scrape(t, metricsAddr)["petstore_audit_events_total"].GetMetric() {
		counted[labelsOf(m)] = m.GetCounter().GetValue()
	}
	for labels, n := range counted {
		if want := map[bool]float64{true: 1}[labels == "action=key.banned"]; n != want {
			t.Errorf("petstore_audit_events_total{%s} %v, want %v (the server wrote key.banned alone)", labels, n, want)
		}
	}
	if counted["action=key.banned"] != 1 {
		t.Errorf("petstore_audit_events_total: %v, want action=key.banned 1", counted)
	}
}
