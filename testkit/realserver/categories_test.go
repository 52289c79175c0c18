package realserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/database"
	"petstore/testkit/realserver"
)

// categoriesMigration is the migration that adds categories.
const categoriesMigration = "1763683910_categories.go"

// TestUpgradeKeepsEveryPetAndShowsTheNumbersInUse: pets created through
// /v1 on data without categories (the categories migration and any later
// one reverted, as the data of the version before) are, once the new binary
// has migrated it, listed exactly as before; the numbers they carry are
// shown as unnamed categories by the categories command and the
// dashboard's view, and none is named.
func TestUpgradeKeepsEveryPetAndShowsTheNumbersInUse(t *testing.T) {
	dir := t.TempDir()
	key, _ := createKey(t, dir, "--plan", "business")
	p, err := realserver.Start(bin, dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, category := range []int{3, 3, 8, 3, 12} {
		body := fmt.Appendf(nil, `{"name":"pet %d","categoryId":%d}`, i, category)
		if status, out, err := p.Do(context.Background(), http.MethodPost, "/v1/pets", key, body); err != nil || status != http.StatusCreated {
			t.Fatalf("create: %d %v %s", status, err, out)
		}
	}
	before := listAllPets(t, p, key)
	p.Kill()
	if len(before) != 5 {
		t.Fatalf("before the upgrade, listPets gave %d pets, want 5", len(before))
	}
	revertDownTo(t, dir, categoriesMigration)

	out, stderr, status := petstore(t, dir, "categories", "list")
	if status != 0 {
		t.Fatalf("categories list: %d %s", status, stderr)
	}
	rows := regexp.MustCompile(`\s+`).ReplaceAllString(strings.TrimSpace(out), " ")
	if want := "ID NAME PETS 3 (unnamed category 3) 3 8 (unnamed category 8) 1 12 (unnamed category 12) 1"; rows != want {
		t.Errorf("categories list after the upgrade:\n%s\nwant the numbers in use, unnamed: %s", out, want)
	}
	p, err = realserver.Start(bin, dir)
	if err != nil {
		t.Fatal(err)
	}
	p.CheckContract(t)
	if after := listAllPets(t, p, key); !slices.Equal(after, before) {
		t.Errorf("listPets after the upgrade\n  %q\nbefore\n  %q", after, before)
	}

	app := core.NewBaseApp(core.BaseAppConfig{DataDir: dir, DBConnect: database.Connect})
	if err := app.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	defer app.ResetBootstrapState()
	var shown []string
	if err := app.DB().NewQuery("SELECT category FROM pets_with_categories ORDER BY category").Column(&shown); err != nil {
		t.Fatal(err)
	}
	p.Kill()
	want := []string{"unnamed category 12", "unnamed category 3", "unnamed category 3", "unnamed category 3", "unnamed category 8"}
	if !slices.Equal(shown, want) {
		t.Errorf("the dashboard's view shows %q, want %q", shown, want)
	}
}

// listAllPets is every pet p lists (one page of up to 100), each pet's JSON
// as sent.
func listAllPets(t *testing.T, p *realserver.Process, key string) []string {
	t.Helper()
	status, body, err := p.Do(context.Background(), http.MethodGet, "/v1/pets?limit=100", key, nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("list: %d %v %s", status, err, body)
	}
	return strings.Split(strings.TrimSpace(string(body)), "},{")
}

// revertDownTo runs petstore's migrations down on dir, newest first, until
// migration is reverted: the data of the version before it.
func revertDownTo(t *testing.T, dir, migration string) {
	t.Helper()
	app := core.NewBaseApp(core.BaseAppConfig{DataDir: dir, DBConnect: database.Connect})
	if err := app.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	defer app.ResetBootstrapState()
	items := core.AppMigrations.Items()
	newer := 0
	for _, m := range items {
		if m.File >= migration {
			newer++
		}
	}
	reverted, err := core.NewMigrationsRunner(app, core.AppMigrations).Down(newer)
	if err != nil || !slices.Contains(reverted, migration) {
		t.Fatalf("revert: %v %v", reverted, err)
	}
}

// The categories command creates (with a number or the one after the highest in use),
// lists, renames and deletes categories on --dir; a refusal (a taken name,
// a used category's deletion, an unknown number) prints why on stderr and
// exits 1.
func TestCategoriesCommand(t *testing.T) {
	dir := t.TempDir()
	key, _ := createKey(t, dir, "--plan", "business")
	run := func(wantStatus int, args ...string) string {
		t.Helper()
		stdout, stderr, status := petstore(t, dir, append([]string{"categories"}, args...)...)
		if status != wantStatus {
			t.Fatalf("categories %q: status %d, want %d; stdout %q, stderr %q", args, status, wantStatus, stdout, stderr)
		}
		return stdout + stderr
	}
	if out := run(0, "create", "--id", "7", "--name", "Dogs"); !strings.Contains(out, "Created category 7, Dogs.") {
		t.Errorf("create: %q", out)
	}
	if out := run(0, "create", "--name", "Cats", "--description", "All cats"); !strings.Contains(out, "Created category 8, Cats.") {
		t.Errorf("create without --id: %q", out)
	}
	if out := run(1, "create", "--name", "dogs"); !strings.Contains(out, "another category has this name") {
		t.Errorf("create with a taken name: %q", out)
	}
	run(0, "rename", "8", "Felines")

	p, err := realserver.Start(bin, dir)
	if err != nil {
		t.Fatal(err)
	}
	p.CheckContract(t)
	if status, out, err := p.Do(context.Background(), http.MethodPost, "/v1/pets", key, []byte(`{"name":"Rex","categoryId":7}`)); err != nil || status != http.StatusCreated {
		t.Fatalf("create a pet: %d %v %s", status, err, out)
	}
	status, body, err := p.Do(context.Background(), http.MethodGet, "/v1/categories", key, nil)
	if err != nil || status != http.StatusOK || string(body) != `[{"id":7,"name":"Dogs"},{"id":8,"name":"Felines"}]`+"\n" {
		t.Errorf("listCategories: %d %v %s", status, err, body)
	}
	p.Kill()

	if out := run(1, "delete", "7"); !strings.Contains(out, "Category 7 (Dogs) cannot be deleted: 1 pet uses it.") {
		t.Errorf("delete of a used category: %q", out)
	}
	if out := run(1, "delete", "99"); !strings.Contains(out, "no category has this number") {
		t.Errorf("delete of an unknown number: %q", out)
	}
	run(0, "delete", "8")
	rows := regexp.MustCompile(`\s+`).ReplaceAllString(strings.TrimSpace(run(0, "list")), " ")
	if rows != "ID NAME PETS 7 Dogs 1" {
		t.Errorf("list: %q", rows)
	}
}

// The categories command, a process of its own, writes its changes'
// events into the outbox in their transactions; the server sends them,
// signed.
func TestWebhookCategoryEventsFromTheCLI(t *testing.T) {
	rcv := newReceiver(t, "127.0.0.1:0")
	s := newWebhookStore(t, "--webhooks-allow-private")
	_, rcv.secret = s.addEndpoint(t, rcv.url(), "category.created", "category.renamed", "category.deleted")
	for _, args := range [][]string{{"create", "--id", "4", "--name", "Dogs"}, {"rename", "4", "Hounds"}, {"delete", "4"}} {
		if _, stderr, status := petstore(t, s.dir, append([]string{"categories"}, args...)...); status != 0 {
			t.Fatalf("categories %q: %d %s", args, status, stderr)
		}
	}
	got := rcv.waitFor(3, 10*time.Second)
	for i, want := range []string{
		`category.created {"id":4,"name":"Dogs"}`,
		`category.renamed {"id":4,"name":"Hounds","previousName":"Dogs"}`,
		`category.deleted {"id":4,"name":"Hounds"}`,
	} {
		var e struct {
			Type string
			Data json.RawMessage
		}
		if err := json.Unmarshal(got[i].body, &e); err != nil || e.Type+" "+string(e.Data) != want || got[i].verified != nil {
			t.Errorf("delivery %d: %s %v %v, want %s", i, got[i].body, err, got[i].verified, want)
		}
	}
}
