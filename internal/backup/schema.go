package backup

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/database"
	"petstore/internal/datadir"
	"petstore/internal/fixedcollections"
	"petstore/internal/replica"
)

// A backup's data.db is a file a superuser can write as they like: a
// trigger that drops every key.revoked record, a collection's rules opened
// to guests, a column's constraint. Its schema is checked before it
// replaces anything, against a reference made here: PocketBase's and
// petstore's migrations, those the backup says it applied, run on an empty
// database, then the backup's own collections (the staff's, and
// PocketBase's system ones) saved there through PocketBase, which makes
// their tables, indexes and views, and Litestream's tables, which a
// replicated database holds. Every table, index, view and trigger of
// the backup must be one the reference has, defined alike, and each fixed
// collection must be as its migrations make it. What is not is refused,
// never dropped: a restore takes all of a backup or nothing.

// SchemaError is a backup refused for its schema: each object or fixed
// collection that petstore's migrations and PocketBase would not make so.
type SchemaError struct {
	Refused []string
}

func (e *SchemaError) Error() string {
	return "the backup's data.db holds a schema that petstore's migrations and PocketBase do not make: " + strings.Join(e.Refused, "; ") +
		". A restore takes no part of a backup's schema on trust; nothing was changed"
}

// schemaObject is a row of sqlite_master.
type schemaObject struct {
	Type    string         `db:"type"`
	Name    string         `db:"name"`
	Table   string         `db:"tbl_name"`
	SQL     sql.NullString `db:"sql"`
	display string
}

// checkSchema checks the schemas of the databases of a backup extracted
// in dir, data.db and auxiliary.db (PocketBase's logs), with a reference
// made in a directory under temp; fixed are the collections the service
// relies on. It returns a *SchemaError naming what it refuses.
func checkSchema(ctx context.Context, dir, temp string, fixed []fixedcollections.Collection) error {
	dbPath := filepath.Join(dir, database.DataFile)
	known := datadir.KnownMigrations()
	state, err := datadir.Inspect(ctx, dbPath, known)
	if err != nil {
		return err
	}
	if len(state.Unknown) > 0 {
		return fmt.Errorf("the backup's data.db holds %d migrations this petstore does not know, the latest %s: it comes from a newer petstore; restore it with that version",
			len(state.Unknown), state.Unknown[len(state.Unknown)-1])
	}
	db, err := core.DefaultDBConnect(dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	var collections []*core.Collection
	if err := db.Select("*").From("_collections").WithContext(ctx).All(&collections); err != nil {
		return fmt.Errorf("read the backup's collections: %w", err)
	}
	applied := slices.DeleteFunc(known, func(file string) bool { return slices.Contains(state.Pending, file) })

	refDir, err := os.MkdirTemp(temp, "pb_restore_reference_")
	if err != nil {
		return err
	}
	defer os.RemoveAll(refDir)
	ref, err := reference(refDir, applied, collections, fixed)
	if err != nil {
		return err
	}
	defer ref.ResetBootstrapState()

	var refused []string
	var refCollections []*core.Collection
	if err := ref.CollectionQuery().All(&refCollections); err != nil {
		return err
	}
	for _, f := range fixed {
		got, want := f.In(collections), f.In(refCollections)
		switch {
		case got == nil && want != nil:
			refused = append(refused, fmt.Sprintf("the collection %s is missing", f.Name))
		case got != nil && (want == nil || !fixedcollections.Same(got, want)):
			refused = append(refused, fmt.Sprintf("the collection %s (stored as %q) differs from the one its migrations make: its rules, fields, indexes or options were changed", f.Name, got.Name))
		}
	}

	differ, err := compareSchemas(db, ref.DB(), "")
	if err != nil {
		return err
	}
	refused = append(refused, differ...)
	auxPath := filepath.Join(dir, auxiliaryFile)
	if _, err := os.Stat(auxPath); err == nil {
		aux, err := core.DefaultDBConnect(auxPath)
		if err != nil {
			return err
		}
		defer aux.Close()
		differ, err := compareSchemas(aux, ref.AuxDB(), auxiliaryFile+"'s ")
		if err != nil {
			return err
		}
		refused = append(refused, differ...)
	}
	if len(refused) > 0 {
		slices.Sort(refused)
		return &SchemaError{Refused: refused}
	}
	return nil
}

// compareSchemas names each object of db's schema that ref's has not, or
// defines otherwise, each name after prefix.
func compareSchemas(db, ref dbx.Builder, prefix string) ([]string, error) {
	objects, err := readSchema(db)
	if err != nil {
		return nil, err
	}
	refObjects, err := readSchema(ref)
	if err != nil {
		return nil, err
	}
	var differ []string
	for key, o := range objects {
		want, ok := refObjects[key]
		switch {
		case !ok:
			differ = append(differ, prefix+o.display+": neither petstore's migrations nor PocketBase make it")
		case !sameObject(o, want):
			differ = append(differ, prefix+o.display+": its definition differs from the one petstore's migrations and PocketBase make")
		}
	}
	return differ, nil
}

// reference makes, in dir, the database that the migrations named applied
// and the backup's collections (but the fixed ones) make.
func reference(dir string, applied []string, collections []*core.Collection, fixed []fixedcollections.Collection) (core.App, error) {
	ref := core.NewBaseApp(core.BaseAppConfig{DataDir: dir})
	if err := ref.Bootstrap(); err != nil { // PocketBase's migrations
		return nil, err
	}
	list := core.MigrationsList{}
	for _, m := range core.AppMigrations.Items() {
		if slices.Contains(applied, m.File) {
			list.Add(m)
		}
	}
	if _, err := core.NewMigrationsRunner(ref, list).Up(); err != nil {
		ref.ResetBootstrapState()
		return nil, fmt.Errorf("run the migrations for the reference schema: %w", err)
	}
	for _, table := range replica.LitestreamTables {
		if _, err := ref.DB().NewQuery(table).Execute(); err != nil {
			ref.ResetBootstrapState()
			return nil, fmt.Errorf("make Litestream's tables in the reference schema: %w", err)
		}
	}
	var own []map[string]any
	for _, c := range collections {
		if slices.ContainsFunc(fixed, func(f fixedcollections.Collection) bool { return f.In([]*core.Collection{c}) != nil }) {
			continue
		}
		raw, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		own = append(own, m)
	}
	if len(own) > 0 {
		if err := ref.ImportCollections(own, false); err != nil {
			ref.ResetBootstrapState()
			return nil, &SchemaError{Refused: []string{"its collections, which PocketBase refuses to make: " + err.Error()}}
		}
	}
	return ref, nil
}

// readSchema reads sqlite_master, keyed by type and name as SQLite compares
// names, but for SQLite's own tables and the indexes of the tables'
// UNIQUE and PRIMARY KEY constraints, which each table's definition makes.
func readSchema(db dbx.Builder) (map[string]schemaObject, error) {
	var rows []schemaObject
	err := db.NewQuery("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE NOT " +
		"((type = 'index' AND name LIKE 'sqlite\\_autoindex\\_%' ESCAPE '\\' AND sql IS NULL) OR " +
		"(type = 'table' AND name IN ('sqlite_sequence', 'sqlite_stat1', 'sqlite_stat4')))").All(&rows)
	if err != nil {
		return nil, fmt.Errorf("read the schema: %w", err)
	}
	objects := make(map[string]schemaObject, len(rows))
	for _, o := range rows {
		o.display = fmt.Sprintf("%s %q", o.Type, o.Name)
		if o.Type != "table" && o.Type != "view" {
			o.display += " on " + o.Table
		}
		objects[o.Type+" "+strings.ToLower(o.Name)] = o
	}
	return objects, nil
}

// sameObject tells whether o is defined as want: by their statements,
// spaces aside; or, for a table, whose statement holds its history
// (PocketBase adds and renames columns with ALTER TABLE), by its columns,
// each defined alike.
func sameObject(o, want schemaObject) bool {
	if !strings.EqualFold(o.Table, want.Table) || o.SQL.Valid != want.SQL.Valid {
		return false
	}
	if collapseSpaces(o.SQL.String) == collapseSpaces(want.SQL.String) {
		return true
	}
	if o.Type != "table" {
		return false
	}
	got, ok := tableColumns(o.SQL.String)
	wanted, wantOK := tableColumns(want.SQL.String)
	return ok && wantOK && maps.Equal(got, wanted)
}

// tableColumns reads a CREATE TABLE statement into its definitions, each
// by its first word (a column's name, unquoted, in lower case), spaces
// collapsed; ok is false for any other shape: text after the definitions
// (WITHOUT ROWID, STRICT), two definitions of one name, quotes left open.
func tableColumns(sql string) (map[string]string, bool) {
	const prefix = "CREATE TABLE "
	if len(sql) < len(prefix) || !strings.EqualFold(sql[:len(prefix)], prefix) {
		return nil, false
	}
	open := strings.IndexByte(sql, '(')
	if open < 0 {
		return nil, false
	}
	var defs []string
	depth, start := 0, open+1
	var quote byte
	end := -1
	for i := open; i < len(sql) && end < 0; i++ {
		c := sql[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			quote = c
		case c == '[':
			quote = ']'
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth == 0 {
				defs = append(defs, sql[start:i])
				end = i
			}
		case c == ',' && depth == 1:
			defs = append(defs, sql[start:i])
			start = i + 1
		}
	}
	if end < 0 || strings.TrimSpace(sql[end+1:]) != "" {
		return nil, false
	}
	columns := make(map[string]string, len(defs))
	for _, d := range defs {
		d = collapseSpaces(d)
		name, rest := firstWord(d)
		if _, dup := columns[name]; dup || name == "" {
			return nil, false
		}
		columns[name] = rest
	}
	return columns, true
}

// firstWord splits a definition into its first word, unquoted and in lower
// case, and the rest.
func firstWord(def string) (string, string) {
	if def == "" {
		return "", ""
	}
	closing := map[byte]byte{'"': '"', '`': '`', '[': ']'}[def[0]]
	if closing != 0 {
		if i := strings.IndexByte(def[1:], closing); i >= 0 {
			return strings.ToLower(def[1 : i+1]), strings.TrimSpace(def[i+2:])
		}
		return "", ""
	}
	word, rest, _ := strings.Cut(def, " ")
	return strings.ToLower(word), rest
}

// collapseSpaces trims s and makes each run of spaces in it one space.
func collapseSpaces(s string) string {
	return strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")
}
