package migrations_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/dataversion"
	_ "petstore/migrations"
)

// migrationsBefore is the app's migrations whose file sorts before file.
func migrationsBefore(file string) core.MigrationsList {
	var list core.MigrationsList
	for _, m := range core.AppMigrations.Items() {
		if m.File < file {
			list.Add(m)
		}
	}
	return list
}

func newApp(t *testing.T) core.App {
	t.Helper()
	app := core.NewBaseApp(core.BaseAppConfig{DataDir: t.TempDir()})
	if err := app.Bootstrap(); err != nil { // applies PocketBase's own migrations
		t.Fatal(err)
	}
	t.Cleanup(func() { app.ResetBootstrapState() })
	return app
}

func settingsJSON(t *testing.T, app core.App) map[string]any {
	t.Helper()
	data, err := json.Marshal(app.Settings())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// On a new install, petstore's migrations turn PocketBase's rate limiter
// on for its auth routes alone, and change no other setting.
func TestRateLimiterOnAndNothingElse(t *testing.T) {
	app := newApp(t)
	before := settingsJSON(t, app)
	if err := app.RunAllMigrations(); err != nil {
		t.Fatal(err)
	}
	after := settingsJSON(t, app)

	limits := app.Settings().RateLimits
	if !limits.Enabled || len(limits.Rules) != 1 || limits.Rules[0] != (core.RateLimitRule{Label: "*:auth", MaxRequests: 2, Duration: 3}) {
		t.Errorf("rate limits %+v, want on with PocketBase's *:auth rule alone, 2 per 3 s", limits)
	}
	wasLimits, _ := json.Marshal(before["rateLimits"].(map[string]any)["excludedIPs"])
	nowLimits, _ := json.Marshal(after["rateLimits"].(map[string]any)["excludedIPs"])
	if string(wasLimits) != string(nowLimits) {
		t.Errorf("excluded addresses %s, were %s", nowLimits, wasLimits)
	}
	delete(before, "rateLimits")
	delete(after, "rateLimits")
	got, _ := json.Marshal(after)
	want, _ := json.Marshal(before)
	if string(got) != string(want) {
		t.Errorf("settings other than the rate limits changed:\n%s\nwere\n%s", got, want)
	}
}

// On an install whose staff already changed settings, the migrations keep
// every change: their own rules (a stricter *:auth among them) and the
// rest. A limiter staff had turned on keeps all its rules, PocketBase's
// shipped ones included.
func TestRateLimiterKeepsStaffSettings(t *testing.T) {
	shipped := core.RateLimitRule{Label: "/api/", MaxRequests: 300, Duration: 10}
	for _, c := range []struct {
		name    string
		enabled bool
		rules   []core.RateLimitRule
		want    []core.RateLimitRule
	}{
		{"off, own rules", false,
			[]core.RateLimitRule{{Label: "*:auth", MaxRequests: 1, Duration: 10}, {Label: "/api/", MaxRequests: 50, Duration: 10},
				{Label: "*:create", MaxRequests: 20, Duration: 5}},
			[]core.RateLimitRule{{Label: "*:auth", MaxRequests: 1, Duration: 10}, {Label: "/api/", MaxRequests: 50, Duration: 10}}},
		{"off, no auth rule", false,
			[]core.RateLimitRule{{Label: "/api/batch", MaxRequests: 1, Duration: 1}},
			[]core.RateLimitRule{{Label: "/api/batch", MaxRequests: 1, Duration: 1}, {Label: "*:auth", MaxRequests: 2, Duration: 3}}},
		{"on", true,
			[]core.RateLimitRule{shipped, {Label: "_superusers:auth", MaxRequests: 3, Duration: 60}},
			[]core.RateLimitRule{shipped, {Label: "_superusers:auth", MaxRequests: 3, Duration: 60}, {Label: "*:auth", MaxRequests: 2, Duration: 3}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			app := newApp(t)
			if _, err := core.NewMigrationsRunner(app, migrationsBefore("1763683680")).Up(); err != nil {
				t.Fatal(err)
			}
			settings := app.Settings()
			settings.Meta.AppName = "The corner pet shop"
			settings.RateLimits.Enabled = c.enabled
			settings.RateLimits.Rules = c.rules
			settings.RateLimits.ExcludedIPs = []string{"10.0.0.7"}
			if err := app.Save(settings); err != nil {
				t.Fatal(err)
			}
			if err := app.RunAllMigrations(); err != nil {
				t.Fatal(err)
			}
			got := app.Settings()
			if got.Meta.AppName != "The corner pet shop" || !got.RateLimits.Enabled || !slices.Equal(got.RateLimits.Rules, c.want) ||
				!slices.Equal(got.RateLimits.ExcludedIPs, []string{"10.0.0.7"}) {
				t.Errorf("after the migrations: app name %q, rate limits %+v; want rules %+v", got.Meta.AppName, got.RateLimits, c.want)
			}
		})
	}
}

// `revoked` becomes a select field with the values carried over, and back
// when the migration is reverted.
func TestRevokedBecomesASelectField(t *testing.T) {
	app := newApp(t)
	if _, err := core.NewMigrationsRunner(app, migrationsBefore("1763683630")).Up(); err != nil {
		t.Fatal(err)
	}
	plan, err := app.FindFirstRecordByData("plans", "name", "free")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := app.FindCollectionByNameOrId("api_keys")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[bool]string{}
	for i, revoked := range []bool{true, false} {
		r := core.NewRecord(keys)
		r.Set("name", "shop")
		r.Set("plan", plan.Id)
		r.Set("key_hash", strings.Repeat(string(rune('a'+i)), 64))
		r.Set("revoked", revoked)
		if err := app.Save(r); err != nil {
			t.Fatal(err)
		}
		ids[revoked] = r.Id
	}
	order := func() []string {
		c, err := app.FindCollectionByNameOrId("api_keys")
		if err != nil {
			t.Fatal(err)
		}
		return c.Fields.FieldNames()
	}
	orderBefore := order()

	// Up to this migration: later ones add fields.
	if _, err := core.NewMigrationsRunner(app, migrationsBefore("1763683631")).Up(); err != nil {
		t.Fatal(err)
	}
	field, ok := func() (*core.SelectField, bool) {
		c, _ := app.FindCollectionByNameOrId("api_keys")
		f, ok := c.Fields.GetByName("revoked").(*core.SelectField)
		return f, ok
	}()
	if !ok || len(field.Values) != 1 || field.Values[0] != "revoked" || field.MaxSelect != 1 || !strings.Contains(field.Help, "final") {
		t.Fatalf("revoked is %+v, want a select field of one value, revoked, whose help says revocation is final", field)
	}
	if got := order(); strings.Join(got, ",") != strings.Join(orderBefore, ",") {
		t.Errorf("field order %v, was %v", got, orderBefore)
	}
	for revoked, want := range map[bool]string{true: "revoked", false: ""} {
		r, err := app.FindRecordById("api_keys", ids[revoked])
		if err != nil {
			t.Fatal(err)
		}
		if got := r.GetString("revoked"); got != want {
			t.Errorf("a key stored with revoked %v reads %q, want %q", revoked, got, want)
		}
	}

	// Reverted, the bool comes back with the same values.
	runner := core.NewMigrationsRunner(app, core.AppMigrations)
	for {
		reverted, err := runner.Down(1)
		if err != nil {
			t.Fatal(err)
		}
		if len(reverted) == 0 || strings.HasPrefix(reverted[0], "1763683630") {
			break
		}
	}
	for revoked := range ids {
		r, err := app.FindRecordById("api_keys", ids[revoked])
		if err != nil {
			t.Fatal(err)
		}
		if got := r.GetBool("revoked"); got != revoked {
			t.Errorf("reverted, a key stored with revoked %v reads %v", revoked, got)
		}
	}
}

// Every key saved before scopes existed may do everything it did: it gets
// both scopes, shown in the dashboard after last_used; reverted, the field
// goes.
func TestExistingKeysGetEveryScope(t *testing.T) {
	app := newApp(t)
	if _, err := core.NewMigrationsRunner(app, migrationsBefore("1763683740")).Up(); err != nil {
		t.Fatal(err)
	}
	plan, err := app.FindFirstRecordByData("plans", "name", "free")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := app.FindCollectionByNameOrId("api_keys")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 3 {
		r := core.NewRecord(keys)
		r.Load(map[string]any{"name": "shop", "plan": plan.Id, "key_hash": strings.Repeat(string(rune('a'+i)), 64)})
		if i == 1 {
			r.Set("revoked", "revoked")
		}
		if err := app.Save(r); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.Id)
	}

	if err := app.RunAllMigrations(); err != nil {
		t.Fatal(err)
	}
	keys, err = app.FindCollectionByNameOrId("api_keys")
	if err != nil {
		t.Fatal(err)
	}
	field, ok := keys.Fields.GetByName("scopes").(*core.SelectField)
	if !ok || !field.Required || field.MaxSelect != 2 || !slices.Equal(field.Values, []string{"pets:read", "pets:write"}) {
		t.Fatalf("scopes is %+v, want a required select of pets:read and pets:write, both allowed", field)
	}
	names := keys.Fields.FieldNames()
	if i := slices.Index(names, "scopes"); i < 1 || names[i-1] != "last_used" {
		t.Errorf("fields %v, want scopes after last_used", names)
	}
	for _, id := range ids {
		r, err := app.FindRecordById("api_keys", id)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.GetStringSlice("scopes"); !slices.Equal(got, []string{"pets:read", "pets:write"}) {
			t.Errorf("key %s has scopes %v, want both", id, got)
		}
	}

	runner := core.NewMigrationsRunner(app, core.AppMigrations)
	for {
		reverted, err := runner.Down(1)
		if err != nil {
			t.Fatal(err)
		}
		if len(reverted) == 0 || strings.HasPrefix(reverted[0], "1763683740") {
			break
		}
	}
	keys, err = app.FindCollectionByNameOrId("api_keys")
	if err != nil {
		t.Fatal(err)
	}
	if keys.Fields.GetByName("scopes") != nil {
		t.Error("reverted, api_keys still has scopes")
	}
}

// The change counters' migration makes the triggers package dataversion
// looks for: each counted table's insert, update and delete moves its own
// number and no other's; a pet's insert after every other moves the pets'
// own and no other, not even the pets' rows' or the pets' before the last,
// which its update and deletion move.
func TestChangeCountersAreWhatTheWatchExpects(t *testing.T) {
	app := newApp(t)
	if err := app.RunAllMigrations(); err != nil {
		t.Fatal(err)
	}
	reads, ok := app.ConcurrentDB().(*dbx.DB)
	if !ok {
		t.Fatalf("the read pool is a %T", app.ConcurrentDB())
	}
	w, err := dataversion.NewWatch(reads.DB())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	counted := []string{"api_keys", "plans", "categories", "webhook_endpoints", "pets", dataversion.Rows("pets"), dataversion.Before("pets")}
	numbers := func() map[string]int64 {
		t.Helper()
		v, err := w.Version()
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int64{"": v.Of()}
		for _, table := range counted {
			m[table] = v.Of(table)
		}
		return m
	}
	exec := func(query string) {
		t.Helper()
		if _, err := app.DB().NewQuery(query).Execute(); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}

	before := numbers()
	exec("INSERT INTO pets (id, name) VALUES ('100000000000001', 'Rex')")
	after := numbers()
	for _, table := range counted {
		if moved := after[table] != before[table]; moved != (table == "pets") {
			t.Errorf("a pet's insert moved %s's number: %v", table, moved)
		}
	}
	if after[""] == before[""] {
		t.Error("a pet's insert did not move the database's number")
	}
	// Each change moves the counters it names and no other.
	type change struct {
		query string
		moves []string
	}
	petRows, petsBefore := dataversion.Rows("pets"), dataversion.Before("pets")
	changes := func(counter string) []change {
		switch counter {
		case petRows:
			exec("INSERT INTO pets (id, name) VALUES ('counterstest001', 'Tom')")
			return []change{
				{"UPDATE pets SET id = 'counterstest002' WHERE id = 'counterstest001'", []string{"pets", petRows, petsBefore}},
				{"DELETE FROM pets WHERE id = 'counterstest002'", []string{"pets", petRows, petsBefore}},
				// The last pet, replaced: no page with a next one holds it.
				{"INSERT OR REPLACE INTO pets (id, name) VALUES ('100000000000001', 'Max')", []string{"pets", petRows}},
			}
		case petsBefore:
			return []change{
				{"INSERT INTO pets (id, name) VALUES ('100000000000000', 'Bo')", []string{"pets", petsBefore}},
				{"INSERT INTO pets (id, name) VALUES ('100000000000002', 'Cy')", []string{"pets"}},
			}
		case "pets":
			return nil // every change above moves it
		}
		exec("INSERT INTO " + counter + " (id) VALUES ('counterstest001')")
		var list []change
		for _, query := range []string{
			"UPDATE " + counter + " SET id = 'counterstest002' WHERE id = 'counterstest001'",
			"DELETE FROM " + counter + " WHERE id = 'counterstest002'",
			"INSERT INTO " + counter + " (id) VALUES ('counterstest003')",
		} {
			list = append(list, change{query, []string{counter}})
		}
		return list
	}
	for _, counter := range counted {
		for _, c := range changes(counter) {
			before := numbers()
			exec(c.query)
			after := numbers()
			for _, other := range counted {
				if moved := after[other] != before[other]; moved != slices.Contains(c.moves, other) {
					t.Errorf("%s: %s's number moved: %v", c.query, other, moved)
				}
			}
		}
	}
}

// The per-day usage history moves to usage_hours, each day to its 00:00
// hour with the operation unknown: its admitted requests served, its 429s
// limited, so that each day counts the same; reverted, the days come back.
func TestUsageDaysBecomeHours(t *testing.T) {
	app := newApp(t)
	if _, err := core.NewMigrationsRunner(app, migrationsBefore("1763684100")).Up(); err != nil {
		t.Fatal(err)
	}
	plan, err := app.FindFirstRecordByData("plans", "name", "free")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := app.FindCollectionByNameOrId("api_keys")
	if err != nil {
		t.Fatal(err)
	}
	key := core.NewRecord(keys)
	key.Set("name", "shop")
	key.Set("plan", plan.Id)
	key.Set("key_hash", strings.Repeat("a", 64))
	key.Set("scopes", []string{"pets:read"})
	if err := app.Save(key); err != nil {
		t.Fatal(err)
	}
	days := []dbx.Params{
		{"api_key": key.Id, "day": "2026-01-30", "requests": 10, "limited": 3},
		{"api_key": key.Id, "day": "2026-01-31", "requests": 4, "limited": 0},
		{"api_key": key.Id, "day": "2026-02-01", "requests": 2, "limited": 2},
	}
	for _, d := range days {
		if _, err := app.DB().Insert("api_key_usage", d).Execute(); err != nil {
			t.Fatal(err)
		}
	}
	if err := app.RunAllMigrations(); err != nil {
		t.Fatal(err)
	}
	if _, err := app.FindCollectionByNameOrId("api_key_usage"); err == nil {
		t.Error("api_key_usage is still there")
	}
	var rows []struct {
		Hour      string `db:"hour"`
		Operation string `db:"operation"`
		Outcome   string `db:"outcome"`
		Requests  int    `db:"requests"`
	}
	if err := app.DB().NewQuery("SELECT hour, operation, outcome, requests FROM usage_hours ORDER BY hour, outcome").All(&rows); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"2026-01-30 00:00:00.000Z unknown limited 3", "2026-01-30 00:00:00.000Z unknown served 7",
		"2026-01-31 00:00:00.000Z unknown served 4", "2026-02-01 00:00:00.000Z unknown limited 2",
	}
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%s %s %s %d", r.Hour, r.Operation, r.Outcome, r.Requests))
	}
	if !slices.Equal(got, want) {
		t.Errorf("usage_hours:\n%q\nwant\n%q", got, want)
	}

	runner := core.NewMigrationsRunner(app, core.AppMigrations)
	for {
		reverted, err := runner.Down(1)
		if err != nil {
			t.Fatal(err)
		}
		if len(reverted) == 0 || strings.HasPrefix(reverted[0], "1763684100") {
			break
		}
	}
	var back []dbx.NullStringMap
	if err := app.DB().NewQuery("SELECT day, requests, limited FROM api_key_usage ORDER BY day").All(&back); err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, r := range back {
		got = append(got, r["day"].String+" "+r["requests"].String+" "+r["limited"].String)
	}
	if want := []string{"2026-01-30 10 3", "2026-01-31 4 0", "2026-02-01 2 2"}; !slices.Equal(got, want) {
		t.Errorf("reverted, api_key_usage: %q, want %q", got, want)
	}
}
