package migrations

import (
	"strings"

	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
)

// The change counters: a row per counter in _petstore_changes, bumped in
// the same transaction by its table's triggers, whatever writes it (the
// records API, the dashboard, the CLI, another instance). A commit that
// moves none of a cache's counters leaves what it keeps valid. These count
// every change of the tables the service keeps reads of across the pets'
// creates: the keys and their plans, the categories, the webhooks'
// subscriptions.
var countedTables = []string{"api_keys", "plans", "categories", "webhook_endpoints"}

func init() {
	m.Register(func(app core.App) error {
		statements := []string{"CREATE TABLE _petstore_changes (tbl TEXT PRIMARY KEY NOT NULL, n INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID"}
		for _, counter := range countedTables {
			statements = append(statements, "INSERT INTO _petstore_changes (tbl) VALUES ('"+counter+"')")
			for _, t := range changeTriggers(counter) {
				statements = append(statements, t[1])
			}
		}
		return execAll(app, statements)
	}, func(app core.App) error {
		var statements []string
		for _, counter := range countedTables {
			for _, t := range changeTriggers(counter) {
				statements = append(statements, "DROP TRIGGER IF EXISTS "+t[0])
			}
		}
		return execAll(app, append(statements, "DROP TABLE IF EXISTS _petstore_changes"))
	})
}

// changeTriggers are counter's triggers, [name, statement], as package
// dataversion expects them (its Triggers; TestChangeCountersAreWhatTheWatchExpects).
func changeTriggers(counter string) [][2]string {
	table, insert := counter, "insert AFTER INSERT ON "+counter
	if t, ok := strings.CutSuffix(counter, ".before"); ok {
		table, insert = t, "insert AFTER INSERT ON "+t+" WHEN NEW.id < (SELECT max(id) FROM "+t+")"
	} else if t, ok := strings.CutSuffix(counter, ".rows"); ok {
		table, insert = t, "replace BEFORE INSERT ON "+t+" WHEN EXISTS (SELECT 1 FROM "+t+" WHERE id = NEW.id)"
	}
	prefix := "_petstore_changes_" + strings.ReplaceAll(counter, ".", "_") + "_"
	bump := " BEGIN UPDATE _petstore_changes SET n = n + 1 WHERE tbl = '" + counter + "'; END"
	var triggers [][2]string
	for _, t := range []string{insert, "update AFTER UPDATE ON " + table, "delete AFTER DELETE ON " + table} {
		suffix, _, _ := strings.Cut(t, " ")
		triggers = append(triggers, [2]string{prefix + suffix, "CREATE TRIGGER " + prefix + t + bump})
	}
	return triggers
}

func execAll(app core.App, statements []string) error {
	for _, s := range statements {
		if _, err := app.DB().NewQuery(s).Execute(); err != nil {
			return err
		}
	}
	return nil
}
