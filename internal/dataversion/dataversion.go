// Package dataversion keeps answers read from an SQLite database for as
// long as the database has not changed, and not a moment longer.
//
// SQLite's PRAGMA data_version is a number that changes whenever another
// connection, in this process or in any other one, commits a change to the
// database file. The value is per connection, so a Watch reads it on one
// connection of its own, which never writes: every commit anywhere is
// "another connection's". A request reads the version once, when it begins,
// and consults every Cache at that version; a Cache drops all its entries as
// soon as it is asked at a newer version than the one they were read at. So
// a revocation, a plan edit or a new pet, made by the dashboard, the CLI
// (another process) or another instance on the same data directory, is seen
// by the very next request that asks, and what a request gets is never
// older than its version.
package dataversion

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Watch reads the data version of one database.
type Watch struct {
	conn *sql.Conn
	stmt driver.Stmt // on conn's driver connection, used inside conn.Raw only
	dest []driver.Value

	begun atomic.Uint64 // reads begun so far

	mu       sync.Mutex // one read at a time: the connection is one
	last     int64      // the value of the latest read
	lastRead uint64     // its number (from begun); 0 when it failed
}

// NewWatch takes one connection out of db for good (Close gives it back).
// It reads through the driver's connection, past database/sql's rows: every
// /v1 request waits for a read, so its cost is everyone's latency.
func NewWatch(db *sql.DB) (*Watch, error) {
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("dataversion: %w", err)
	}
	w := &Watch{conn: conn, dest: make([]driver.Value, 1)}
	err = conn.Raw(func(dc any) error {
		stmt, err := dc.(driver.Conn).Prepare("PRAGMA data_version")
		if err != nil {
			return err
		}
		if _, ok := stmt.(driver.StmtQueryContext); !ok {
			stmt.Close()
			return errors.New("the driver's statements take no context")
		}
		w.stmt = stmt
		return nil
	})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("dataversion: %w", err)
	}
	return w, nil
}

// Version is the database's data version now: the value of a read that
// began after Version was called, so it counts every commit that had ended
// by then. Each read starts and ends a read transaction on the Watch's
// connection, which is what makes SQLite look at the database (its WAL
// index) again. Concurrent callers share a read: while one read runs, the
// callers that arrive wait for the next one, and that one serves them all,
// having begun after each of them arrived.
func (w *Watch) Version() (int64, error) {
	arrived := w.begun.Load()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lastRead > arrived {
		return w.last, nil
	}
	w.lastRead = w.begun.Add(1)
	if err := w.conn.Raw(w.read); err != nil {
		w.lastRead = 0
		return 0, fmt.Errorf("dataversion: %w", err)
	}
	return w.last, nil
}

// read runs the statement once, on the driver connection conn.Raw lends.
// Closing the rows ends the read transaction.
func (w *Watch) read(any) error {
	rows, err := w.stmt.(driver.StmtQueryContext).QueryContext(context.Background(), nil)
	if err != nil {
		return err
	}
	err = rows.Next(w.dest)
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	v, ok := w.dest[0].(int64)
	if !ok {
		return fmt.Errorf("data_version is %T", w.dest[0])
	}
	w.last = v
	return nil
}

// Close gives the connection back to its pool.
func (w *Watch) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	_ = w.conn.Raw(func(any) error { return w.stmt.Close() })
	return w.conn.Close()
}

// Cache holds up to a bounded number of values read from the watched
// database, all at one data version. The callers that miss one key at one
// version share one read of it: right after a commit, the requests in flight
// would otherwise all read the same row or page at once.
type Cache[V any] struct {
	max int

	mu      sync.Mutex
	version int64
	entries map[string]V
	reads   map[string]*read[V] // the reads under way at version
}

// read is a read of one key that other callers wait for.
type read[V any] struct {
	done  chan struct{}
	value V
	err   error
}

// NewCache is a cache of at most max entries.
func NewCache[V any](max int) *Cache[V] {
	return &Cache[V]{max: max, entries: make(map[string]V), reads: make(map[string]*read[V])}
}

// Load returns the value of key at version, a Watch's Version: kept, or
// read by load (which must read the database after that Version returned)
// and kept. A value read after the version may be newer than it, never
// older, so a later change still drops it. A caller at an older version
// than the latest seen is served as one at the latest: what it gets is
// newer than its version, never older. Callers that miss one key wait for
// the first one's load and share its value or error; an error is not kept,
// and neither is a value when the database has changed since (a newer
// version was seen) or the cache is full.
func (c *Cache[V]) Load(version int64, key string, load func() (V, error)) (V, error) {
	c.mu.Lock()
	switch {
	case version > c.version: // the Watch's versions only grow
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
