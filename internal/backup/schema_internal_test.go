package backup

import (
	"path/filepath"
	"testing"

	"github.com/pocketbase/pocketbase/core"
)

// A table that PocketBase grew column by column (ALTER TABLE ADD, then
// RENAME, as its record table sync does) is the table made whole at once;
// a table with anything else in its statement is not.
func TestSameObjectComparesTablesByColumns(t *testing.T) {
	tableOf := func(statements ...string) schemaObject {
		t.Helper()
		db, err := core.DefaultDBConnect(filepath.Join(t.TempDir(), "data.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, s := range statements {
			if _, err := db.NewQuery(s).Execute(); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		objects, err := readSchema(db)
		if err != nil {
			t.Fatal(err)
		}
		return objects["table notes"]
	}
	const whole = "CREATE TABLE `notes` (`id` TEXT PRIMARY KEY DEFAULT ('r'||lower(hex(randomblob(7)))) NOT NULL, " +
		"`title` TEXT DEFAULT '' NOT NULL, `stars` NUMERIC DEFAULT 0 NOT NULL)"
	want := tableOf(whole)
	grown := tableOf(
		"CREATE TABLE `notes` (`id` TEXT PRIMARY KEY DEFAULT ('r'||lower(hex(randomblob(7)))) NOT NULL, `title` TEXT DEFAULT '' NOT NULL)",
		"ALTER TABLE `notes` ADD COLUMN `starsx1y2z` NUMERIC DEFAULT 0 NOT NULL",
		"ALTER TABLE `notes` RENAME COLUMN `starsx1y2z` TO `stars`")
	if grown.SQL.String == want.SQL.String {
		t.Fatalf("the grown table's statement is the whole one's: %s", grown.SQL.String)
	}
	if !sameObject(grown, want) {
		t.Errorf("the grown table\n%s\ndiffers from\n%s", grown.SQL.String, want.SQL.String)
	}
	for _, other := range []string{
		whole[:len(whole)-1] + ", CHECK (`stars` < 5))",
		whole + " WITHOUT ROWID",
		whole[:len(whole)-1] + ", UNIQUE (`title`) ON CONFLICT IGNORE)",
		"CREATE TABLE `notes` (`id` TEXT PRIMARY KEY DEFAULT ('r'||lower(hex(randomblob(7)))) NOT NULL, " +
			"`title` TEXT DEFAULT '' NOT NULL COLLATE NOCASE, `stars` NUMERIC DEFAULT 0 NOT NULL)",
		"CREATE TABLE `notes` (`id` TEXT PRIMARY KEY DEFAULT ('r'||lower(hex(randomblob(7)))) NOT NULL, " +
			"`title` TEXT DEFAULT '' NOT NULL, `stars` NUMERIC DEFAULT 0 NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE)",
		"CREATE TABLE `notes` (`id` TEXT PRIMARY KEY DEFAULT ('r'||lower(hex(randomblob(7)))) NOT NULL, " +
			"`title` TEXT DEFAULT '' NOT NULL, `stars` NUMERIC DEFAULT 0 NOT NULL /* , */)",
	} {
		if o := tableOf(other); sameObject(o, want) {
			t.Errorf("%s\nis taken for\n%s", o.SQL.String, want.SQL.String)
		}
	}
}
