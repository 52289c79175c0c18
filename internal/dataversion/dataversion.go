// Package dataversion keeps answers read from an SQLite database for as
// long as the tables they come from have not changed, and not a moment
// longer.
//
// SQLite's PRAGMA data_version is a number that changes whenever another
// connection, in this process or in any other one, commits a change to the
// database file. The value is per connection, so a Watch reads it on one
// connection of its own, which never writes: every commit anywhere is
// "another connection's". A request reads the Version once, when it begins,
// and consults every Cache at that version; a Cache drops all its entries as
// soon as it is asked at a version where one of its tables (or, for a Cache
// of no table, anything) changed since they were read. So a revocation, a
// plan edit or a new pet, made by the dashboard, the CLI (another process) or
// another instance on the same data directory, is seen by the very next
// request that asks, and what a request gets is never older than its
// version.
//
// Which tables a commit changed comes from the change counters: a row per
// counter in ChangesTable, bumped by its table's triggers (Triggers: every
// insert, update and deletion, or, for a Rows counter, those that change an
// existing row), which a migration makes. So every writer, whatever process
// or instance it is, counts its changes in the same commit. When the data
// version moves, the Watch reads the counters; when the schema changed, it
// checks the triggers first, and a counter without all its triggers, as
// Triggers makes them, counts as changed by every commit.
package dataversion

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// ChangesTable holds the change counters: a row (tbl, n) per watched table.
const ChangesTable = "_petstore_changes"

// countersSQL reads the counters with the schema version, in one snapshot.
const countersSQL = "SELECT tbl, n, (SELECT schema_version FROM pragma_schema_version()) FROM " + ChangesTable

// Rows names the counter of table's existing rows: their updates and
// deletions, and the inserts that replace one (by id). A new row does not
// count, so a cache of rows found by id, which keeps no absent one, is kept
// while rows are added.
func Rows(table string) string { return table + rowsSuffix }

const rowsSuffix = ".rows"

// Before names the counter of table's rows before its last id: every
// update and deletion, and the inserts of an id below the table's largest.
// An insert after every row does not count, so a page of rows in id order
// that has a row after it, which such an insert cannot change, is kept
// while rows are appended.
func Before(table string) string { return table + beforeSuffix }

const beforeSuffix = ".before"

// Trigger is a trigger that counts changes: its name and the statement that
// makes it, as the Watch expects it.
type Trigger struct{ Name, SQL string }

// Triggers are the triggers of counter: a table's name (its inserts,
// updates and deletions), a Rows or a Before.
func Triggers(counter string) []Trigger {
	table, insert := counter, "insert AFTER INSERT ON "+counter
	if t, ok := strings.CutSuffix(counter, beforeSuffix); ok {
		table, insert = t, "insert AFTER INSERT ON "+t+" WHEN NEW.id < (SELECT max(id) FROM "+t+")"
	} else if t, ok := strings.CutSuffix(counter, rowsSuffix); ok {
		table, insert = t, "replace BEFORE INSERT ON "+t+" WHEN EXISTS (SELECT 1 FROM "+t+" WHERE id = NEW.id)"
	}
	prefix := ChangesTable + "_" + strings.ReplaceAll(counter, ".", "_") + "_"
	bump := " BEGIN UPDATE " + ChangesTable + " SET n = n + 1 WHERE tbl = '" + counter + "'; END"
	var triggers []Trigger
	for _, t := range []string{insert, "update AFTER UPDATE ON " + table, "delete AFTER DELETE ON " + table} {
		suffix, _, _ := strings.Cut(t, " ")
		triggers = append(triggers, Trigger{prefix + suffix, "CREATE TRIGGER " + prefix + t + bump})
	}
	return triggers
}

// walStamp is what a commit changes in the WAL index's header.
type walStamp [3]uint64

// fresh is the latest Version read, with the WAL index's stamp read before
// that read began: while the header still shows that stamp, nothing has
// committed since, and the Version is the database's.
type fresh struct {
	index *walIndex
	stamp walStamp
	v     Version
}

// Version is a state of the database, as a Watch read it.
type Version struct {
	seq    int64   // grows with every move of the data version the Watch saw
	tables *stamps // nil: no table is watched
	epoch  uint64  // the Watch's (Epoch)
}

// stamps are, per watched table, the seq at which the Watch last saw its
// counter move. Never changed once a Version holds them.
type stamps struct{ of map[string]int64 }

// Of is a number that grows whenever one of tables changed and stays the
// same otherwise; with no tables, or one that is not watched, whenever the
// database changed. Numbers of different table sets are comparable: each is
// at most the latest seq.
func (v Version) Of(tables ...string) int64 {
	if len(tables) == 0 || v.tables == nil {
		return v.seq
	}
	var of int64
	for _, t := range tables {
		s, ok := v.tables.of[t]
		if !ok {
			return v.seq
		}
		of = max(of, s)
	}
	return of
}

// Epoch names the Watch that read v: a random number drawn when the Watch
// was made. Of's numbers count from the Watch's start, so they say nothing
// across Watches: a number seen before a restart, a restore or a cluster's
// failover (each a new process, with a new Watch) may name another state
// now. Of with Epoch names one state of the tables, for as long as anyone
// may remember it.
func (v Version) Epoch() uint64 { return v.epoch }

// Watch reads the data version of one database, and the change counters.
type Watch struct {
	epoch uint64 // each Version's Epoch
	conn  *sql.Conn
	// Statements on conn's driver connection, used inside conn.Raw only.
	data, schema driver.StmtQueryContext
	counters     driver.StmtQueryContext // prepared once a table is watched
	dest         []driver.Value

	// walIndex is the database's WAL index header, nil when it cannot be
	// mapped (another system, a database in memory or not in WAL mode):
	// every Version then reads.
	walIndex  *walIndex
	headerErr error                 // why walIndex is nil
	fresh     atomic.Pointer[fresh] // nil until the first read, and after Close

	begun atomic.Uint64 // reads begun so far

	mu       sync.Mutex // one read at a time: the connection is one
	dataSeen int64      // the data version of the latest read
	last     Version    // the latest read's
	lastRead uint64     // its number (from begun); 0 when it failed

	schemaSeen int64            // the schema version the triggers were checked at; -1: not yet
	watched    []string         // the tables whose triggers are in place, as of schemaSeen
	counted    map[string]int64 // their counters, as last read
}

// NewWatch takes one connection out of db for good (Close gives it back).
// It reads through the driver's connection, past database/sql's rows: every
// /v1 request waits for a read, so its cost is everyone's latency. When it
// can, it also maps the database's WAL index header, so that a Version
// with no commit since the last read reads nothing.
func NewWatch(db *sql.DB) (*Watch, error) {
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("dataversion: %w", err)
	}
	w := &Watch{epoch: rand.Uint64(), conn: conn, dest: make([]driver.Value, 3), schemaSeen: -1}
	err = conn.Raw(func(dc any) error {
		if w.data, err = prepare(dc, "PRAGMA data_version"); err != nil {
			return err
		}
		w.schema, err = prepare(dc, "PRAGMA schema_version")
		return err
	})
	var path string
	if err == nil {
		path, err = walPath(ctx, conn)
	}
	if err != nil {
		w.closeStatements()
		conn.Close()
		return nil, fmt.Errorf("dataversion: %w", err)
	}
	// Without the header, every Version reads: slower, as correct.
	w.headerErr = errors.New("the database is not a file in WAL mode")
	if path != "" {
		w.walIndex, w.headerErr = openWALIndex(path)
	}
	return w, nil
}

// HeaderErr says why the Watch does not read the WAL index header, so that
// every Version reads the database; nil when it does.
func (w *Watch) HeaderErr() error { return w.headerErr }

// Reads is how many reads of the database the Watch has begun: one or two
// per commit while it reads the WAL index header (a write that finds the
// WAL all copied into the database moves the header as it starts the WAL
// over, then as it commits), one per Version (shared by concurrent
// callers) otherwise.
func (w *Watch) Reads() uint64 { return w.begun.Load() }

// walPath is the file of conn's main database when it is in WAL mode, or
// "". A database stays in WAL mode while conn is open: leaving it takes an
// exclusive lock that conn's shared one prevents. Reading the schema
// version opens the WAL index, if no connection has yet.
func walPath(ctx context.Context, conn *sql.Conn) (string, error) {
	var mode, path string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || !strings.EqualFold(mode, "wal") {
		return "", err
	}
	err := conn.QueryRowContext(ctx, "SELECT file, (SELECT schema_version FROM pragma_schema_version) FROM pragma_database_list WHERE name = 'main'").Scan(&path, new(int64))
	return path, err
}

func prepare(dc any, query string) (driver.StmtQueryContext, error) {
	stmt, err := dc.(driver.Conn).Prepare(query)
	if err != nil {
		return nil, err
	}
	q, ok := stmt.(driver.StmtQueryContext)
	if !ok {
		stmt.Close()
		return nil, errors.New("the driver's statements take no context")
	}
	return q, nil
}

// Version is the database's version now: from a read that began after
// Version was called, so it counts every commit that had ended by then.
// Each read starts and ends a read transaction on the Watch's connection,
// which is what makes SQLite look at the database (its WAL index) again.
// Concurrent callers share a read: while one read runs, the callers that
// arrive wait for the next one, and that one serves them all, having begun
// after each of them arrived.
//
// With the WAL index header mapped, a call reads nothing while the header
// shows what it showed before the latest read began: a commit that ended
// before the call changed the header before it ended, so either the read
// began after it (and counts it) or the header differs. For the same
// reason, a call that finds the header changed shares a read under way if
// the header showed, before that read began, what it shows at the call.
func (w *Watch) Version() (Version, error) {
	var arrivedAt walStamp // the header when the call began
	f := w.fresh.Load()
	if f != nil {
		if arrivedAt = f.index.stamp(); arrivedAt == f.stamp {
			return f.v, nil
		}
	}
	arrived := w.begun.Load()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lastRead > arrived {
		return w.last, nil
	}
	if f != nil {
		if latest := w.fresh.Load(); latest != nil && latest.stamp == arrivedAt {
			return latest.v, nil
		}
	}
	w.lastRead = w.begun.Add(1)
	var stamp walStamp
	if w.walIndex != nil {
		stamp = w.walIndex.stamp()
	}
	if err := w.conn.Raw(w.read); err != nil {
		w.lastRead = 0
		return Version{}, fmt.Errorf("dataversion: %w", err)
	}
	if w.walIndex != nil {
		w.fresh.Store(&fresh{index: w.walIndex, stamp: stamp, v: w.last})
	}
	return w.last, nil
}

// read reads the data version and, when it moved, the tables' counters:
// after the data version, so that they count every commit it does. It
// runs on the driver connection conn.Raw lends.
func (w *Watch) read(dc any) error {
	var data int64
	err := w.query(w.data, func() error {
		v, ok := w.dest[0].(int64)
		if !ok {
			return fmt.Errorf("data_version is %T", w.dest[0])
		}
		data = v
		return nil
	})
	if err != nil || (w.last.seq > 0 && data == w.dataSeen) {
		return err
	}
	seq := w.last.seq + 1
	tables, err := w.readCounters(dc, seq)
	if err != nil {
		return err
	}
	w.dataSeen = data
	w.last = Version{seq: seq, tables: tables, epoch: w.epoch}
	return nil
}

// query runs stmt and calls row with each row in dest. Closing the rows
// ends the read transaction.
func (w *Watch) query(stmt driver.StmtQueryContext, row func() error) error {
	rows, err := stmt.QueryContext(context.Background(), nil)
	if err != nil {
		return err
	}
	for err == nil {
		if err = rows.Next(w.dest[:len(rows.Columns())]); err == nil {
			err = row()
		}
	}
	if cerr := rows.Close(); errors.Is(err, io.EOF) {
		err = cerr
	}
	return err
}

// readCounters reads the watched tables' counters at seq and returns the
// stamps of the Version at seq: those of the last, with seq for each table
// whose counter moved or that is newly watched.
func (w *Watch) readCounters(dc any, seq int64) (*stamps, error) {
	counted := make(map[string]int64, len(w.watched))
	readCounters := func() (schema int64, err error) {
		clear(counted)
		err = w.query(w.counters, func() error {
			table, _ := w.dest[0].(string)
			n, _ := w.dest[1].(int64)
			schema, _ = w.dest[2].(int64)
			if slices.Contains(w.watched, table) {
				counted[table] = n
			}
			return nil
		})
		return schema, err
	}
	var schema int64
	var err error
	if len(w.watched) > 0 {
		schema, err = readCounters()
	} else {
		err = w.query(w.schema, func() error { schema, _ = w.dest[0].(int64); return nil })
	}
	if err != nil {
		return nil, err
	}
	if schema != w.schemaSeen {
		// The triggers may have changed: check them, then read the
		// counters again. A schema change after schema is seen at the
		// next read.
		watched, err := w.readTriggers(dc)
		if err != nil {
			return nil, err
		}
		w.watched, w.schemaSeen = watched, schema
		if len(watched) > 0 && w.counters == nil {
			if w.counters, err = prepare(dc, countersSQL); err != nil {
				return nil, err
			}
		}
		clear(counted)
		if len(watched) > 0 {
			if _, err := readCounters(); err != nil {
				return nil, err
			}
		}
	}
	old, prev := w.counted, w.last.tables
	w.counted = counted
	if len(counted) == 0 {
		return nil, nil
	}
	changed := prev == nil || len(prev.of) != len(counted)
	next := &stamps{of: make(map[string]int64, len(counted))}
	for t, n := range counted {
		var s int64
		var kept bool
		if prev != nil {
			s, kept = prev.of[t]
		}
		if !kept || old[t] != n {
			s, changed = seq, true
		}
		next.of[t] = s
	}
	if !changed {
		return prev, nil
	}
	return next, nil
}

// readTriggers returns the counters whose triggers are all in place, as
// Triggers makes them. It runs when the schema changed: rarely.
func (w *Watch) readTriggers(dc any) ([]string, error) {
	stmt, err := prepare(dc, "SELECT name, tbl_name, sql FROM sqlite_schema WHERE type = 'trigger'")
	if err != nil {
		return nil, err
	}
	defer stmt.(driver.Stmt).Close()
	made := make(map[string]string) // each trigger's statement, by name
	var candidates []string         // the counters of the tables with triggers
	err = w.query(stmt, func() error {
		name, _ := w.dest[0].(string)
		table, _ := w.dest[1].(string)
		made[name], _ = w.dest[2].(string)
		for _, c := range []string{table, Rows(table), Before(table)} {
			if !slices.Contains(candidates, c) {
				candidates = append(candidates, c)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var watched []string
	for _, counter := range candidates {
		complete := true
		for _, t := range Triggers(counter) {
			complete = complete && made[t.Name] == t.SQL
		}
		if complete {
			watched = append(watched, counter)
		}
	}
	slices.Sort(watched)
	return watched, nil
}

// Close gives the connection back to its pool.
func (w *Watch) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.walIndex = nil
	w.fresh.Store(nil)
	w.closeStatements()
	return w.conn.Close()
}

func (w *Watch) closeStatements() {
	_ = w.conn.Raw(func(any) error {
		for _, stmt := range []driver.StmtQueryContext{w.data, w.schema, w.counters} {
			if stmt != nil {
				stmt.(driver.Stmt).Close()
			}
		}
		return nil
	})
}

// Cache holds up to a bounded number of values read from the watched
// database's tables, all at one version of them. The callers that miss one
// key at one version share one read of it: right after a change, the
// requests in flight would otherwise all read the same row or page at once.
type Cache[V any] struct {
	max    int
	tables []string // what its values are read from; none: anything

	mu      sync.Mutex
	version int64 // the Version's Of(tables...) the entries are at
	entries map[string]V
	reads   map[string]*read[V] // the reads under way at version
}

// read is a read of one key that other callers wait for.
type read[V any] struct {
	done  chan struct{}
	value V
	err   error
}

// NewCache is a cache of at most max entries, read from tables: a change of
// any of them drops the entries. With no tables, any change of the database
// does; name every table a value's query reads.
func NewCache[V any](max int, tables ...string) *Cache[V] {
	return &Cache[V]{max: max, tables: tables, entries: make(map[string]V), reads: make(map[string]*read[V])}
}

// Load returns the value of key at version, a Watch's Version: kept, or
// read by load (which must read the database after that Version returned)
// and kept. A value read after the version may be newer than it, never
// older, so a later change of its tables still drops it. A caller at an older version
// than the latest seen is served as one at the latest: what it gets is
// newer than its version, never older. Callers that miss one key wait for
// the first one's load and share its value or error; an error is not kept,
// and neither is a value when the database has changed since (a newer
// version was seen) or the cache is full.
func (c *Cache[V]) Load(v Version, key string, load func() (V, error)) (V, error) {
	version := v.Of(c.tables...)
	c.mu.Lock()
	switch {
	case version > c.version: // a Watch's versions only grow
		clear(c.entries)
		clear(c.reads)
		c.version = version
	case version < c.version:
		// A caller with a newer version came first. What is kept at it,
		// or read now, counts every commit this caller's version does:
		// newer, never older. So the caller shares it, and a value it
		// reads is kept at the newer version.
		version = c.version
	}
	if value, ok := c.entries[key]; ok {
		c.mu.Unlock()
		return value, nil
	}
	if r, ok := c.reads[key]; ok {
		c.mu.Unlock()
		<-r.done
		return r.value, r.err
	}
	r := &read[V]{done: make(chan struct{})}
	c.reads[key] = r
	c.mu.Unlock()

	r.value, r.err = load()
	c.mu.Lock()
	if c.reads[key] == r {
		delete(c.reads, key)
	}
	if r.err == nil && version == c.version && len(c.entries) < c.max {
		c.entries[key] = r.value
	}
	c.mu.Unlock()
	close(r.done)
	return r.value, r.err
}
