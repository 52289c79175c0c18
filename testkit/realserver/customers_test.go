package realserver_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"petstore/testkit/realserver"
)

// customersMigration is the migration that adds customers.
const customersMigration = "1763683980_customers.go"

// TestUpgradeKeepsKeysWorkingThenTheCustomersCommandMovesThem: a key made
// on data without customers (the customers migration reverted, as the data
// of the version before) answers the same after the new binary migrates it,
// with its own plan's limits, and belongs to no customer. The customers
// command then creates a customer, gives it the key (which takes the
// customer's plan), lists and shows it, renames it and changes its plan;
// the server sees each plan at the key's next request. A refusal prints why
// on stderr and exits 1.
func TestUpgradeKeepsKeysWorkingThenTheCustomersCommandMovesThem(t *testing.T) {
	dir := t.TempDir()
	key, id := createKey(t, dir, "--plan", "free")
	revertDownTo(t, dir, customersMigration)

	limit := func() string {
		t.Helper()
		p, err := realserver.Start(bin, dir)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Kill()
		resp, body, err := p.Exchange(context.Background(), http.MethodGet, "/v1/pets", key, nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("listPets: %v %v %s", resp, err, body)
		}
		return resp.Header.Get("X-RateLimit-Limit")
	}
	if got := limit(); got != "60" {
		t.Fatalf("after the upgrade, the free key's limit is %s, want 60", got)
	}

	// run answers stdout, or, for a refusal, stderr (where the audit's log
	// lines go too).
	run := func(wantStatus int, args ...string) string {
		t.Helper()
		stdout, stderr, status := petstore(t, dir, append([]string{"customers"}, args...)...)
		if status != wantStatus {
			t.Fatalf("customers %q: status %d, want %d; stdout %q, stderr %q", args, status, wantStatus, stdout, stderr)
		}
		if wantStatus != 0 {
			return stderr
		}
		return stdout
	}
	out := run(0, "create", "--name", "Acme", "--plan", "pro", "--contact", "ops@acme.example")
	m := regexp.MustCompile(`^Created customer ([a-z0-9]{15}), Acme, on plan pro\.\n$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("create: %q", out)
	}
	customer := m[1]
	for _, refused := range []struct {
		args []string
		says string
	}{
		{[]string{"create", "--name", "ACME", "--plan", "free"}, "another customer has this name"},
		{[]string{"create", "--name", "Other"}, "--plan is required"},
		{[]string{"plan", "Acme", "gold"}, `unknown plan "gold"`},
		{[]string{"assign", id, "Nobody"}, "no customer has this id or name"},
		{[]string{"assign", id}, "a customer (its id or name) is required, or --none"},
	} {
		if out := run(1, refused.args...); !strings.Contains(out, refused.says) {
			t.Errorf("customers %q: %q, want it to say %q", refused.args, out, refused.says)
		}
	}
	if out := run(0, "assign", id, "acme"); out != "Key "+id+" belongs to customer "+customer+".\n" {
		t.Errorf("assign: %q", out)
	}
	if got := limit(); got != "300" {
		t.Errorf("the key of a pro customer: limit %s, want 300", got)
	}
	if out := run(0, "plan", customer, "business"); !strings.Contains(out, "and its keys are on plan business") {
		t.Errorf("plan: %q", out)
	}
	if got := limit(); got != "1000" {
		t.Errorf("after the customer's plan change: limit %s, want 1000", got)
	}
	run(0, "rename", "Acme", "Acme Corp")
	rows := regexp.MustCompile(`\s+`).ReplaceAllString(strings.TrimSpace(run(0, "list")), " ")
	if want := "ID NAME PLAN KEYS CONTACT " + customer + " Acme Corp business 1 ops@acme.example"; rows != want {
		t.Errorf("list: %q, want %q", rows, want)
	}
	if out := run(0, "show", "acme corp"); !strings.Contains(out, "Plan:     business") || !strings.Contains(out, id) {
		t.Errorf("show: %q", out)
	}
	if out := run(0, "assign", id, "--none"); out != "Key "+id+" belongs to no customer.\n" {
		t.Errorf("assign --none: %q", out)
	}
}
