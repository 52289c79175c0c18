package database

import (
	"database/sql"
	"fmt"
	"log/slog"
	"time"
)

// Checkpointer copies the main database's WAL back into the database file
// every CheckpointEvery, from a connection of its own.
//
// SQLite checkpoints when a commit leaves the WAL at 1,000 pages or more, in
// the committing connection, before the commit returns: the copy and its two
// fsyncs, milliseconds or tens of them on a busy disk, fall on the one
// writer that every create waits for. Connections to the main database are
// opened without that (Connect), and a Checkpointer does it instead. A
// passive checkpoint waits for no one: the writer goes on appending to the
// WAL, and readers go on reading, while it runs. The WAL restarts from its
// beginning when a writer finds it all copied and no reader in it.
type Checkpointer struct {
	db     *sql.DB
	logger *slog.Logger
	stop   chan struct{}
	done   chan struct{}
}

// CheckpointEvery is how often the Checkpointer runs: at the benchmark's
// create rate the WAL grows by a few MB in that time.
const CheckpointEvery = 100 * time.Millisecond

// StartCheckpointer checkpoints the database at dbPath until Stop, logging
// failures to logger.
func StartCheckpointer(dbPath string, logger *slog.Logger) (*Checkpointer, error) {
	db, err := Connect(dbPath)
	if err != nil {
		return nil, fmt.Errorf("open the checkpointer's connection: %w", err)
	}
	db.DB().SetMaxOpenConns(1)
	c := &Checkpointer{db: db.DB(), logger: logger, stop: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c, nil
}

func (c *Checkpointer) run() {
	defer close(c.done)
	tick := time.NewTicker(CheckpointEvery)
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
		}
		// busy is 1 when another connection (another instance's
		// Checkpointer) was checkpointing: it does the work.
		var busy, logFrames, copied int
		if err := c.db.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logFrames, &copied); err != nil {
			c.logger.Error("Could not checkpoint the database's WAL", "error", err)
		}
	}
}

// Stop stops checkpointing and closes the connection.
func (c *Checkpointer) Stop() error {
	close(c.stop)
	<-c.done
	return c.db.Close()
}
