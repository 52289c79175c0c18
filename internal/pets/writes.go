package pets

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/types"

	"petstore/internal/database"
	"petstore/internal/tracing"
)

// Writer writes createPet's pets with group commit. One goroutine owns the
// writing: it takes the creates that are waiting (at most maxBatch, and
// while more are on their way, those that arrive within gatherFor of the
// first) and runs them in one transaction on PocketBase's write connection
// (app.NonconcurrentDB()), each within a savepoint of its own. A create that
// fails rolls back to its savepoint and gets its own error; the others in
// the transaction go on. Every caller is answered only after the transaction
// that holds its create has committed (and, with OnAcknowledge, once the
// commit is acknowledged).
//
// SQLite takes one write transaction at a time, and every transaction pays
// for its beginning and its commit: creates that each commit queue behind
// one another for the write connection, which database/sql hands to a
// random waiter. One transaction for the creates that arrive together pays
// once, writes the pages they share once, and the writer serves them in the
// order they arrived.
//
// A pet is a plain row, as the record save would store it, written with an
// INSERT prepared once: no core.Record is built, and no validator or record
// hook runs. Callers have checked the NewPet against the rules. After the
// commit, the rows a caller created go to the function OnCreated set, in
// the caller's goroutine (docs/api.md: which hooks and events follow).
type Writer struct {
	app core.App
	// created hears of each caller's new rows after their commit; nil: none.
	created func([]Row)
	// inserted hears of a transaction's new rows inside it; nil: none.
	inserted func(tx core.App, rows []Row) error
	// committed hears of each transaction that committed: how many creates
	// it held and how long it took; nil: none.
	committed func(creates int, took time.Duration)
	// acknowledge is waited for before a caller whose work committed is
	// answered; nil: none.
	acknowledge func() error
	// Prepared once on the write connection, used in each transaction.
	insert, savepoint, release, rollbackTo *sql.Stmt

	queue     chan *write
	gatherFor time.Duration
	// expected counts the creates on their way (Expect).
	expected atomic.Int64
	// mu guards stopped: Stop waits for every Run that is queueing a
	// write, so the writer's last drain sees all of them.
	mu      sync.RWMutex
	stopped bool
	stop    chan struct{}
	done    chan struct{}
}

// Tx is one create's part of a write transaction: its statements run
// within its own savepoint, or, alone in the transaction, the transaction.
type Tx struct {
	app    core.App
	sqlTx  *sql.Tx
	insert *sql.Stmt
	write  *write // whose statements run now
}

// App is the transaction's app, for the create's other statements (its
// Idempotency-Key's row): what it writes commits or rolls back with the pet.
func (tx *Tx) App() core.App { return tx.app }

// write is one caller's work, waiting for its transaction.
type write struct {
	work func(*Tx) error
	err  error
	rows []Row // what work inserted in its last run
	done chan struct{}
	// batch and took are the size and duration of the transaction that
	// answered it, for its span.
	batch int
	took  time.Duration
	// traceparent names the caller's span, which its rows carry.
	traceparent string
}

const (
	// maxBatch bounds the creates of one transaction.
	maxBatch = 128
	// gatherFor is how long a transaction waits, at most, for the creates
	// on their way: the most a create is delayed.
	gatherFor = time.Millisecond
	// queueSize bounds the creates waiting for the writer; more callers wait
	// to queue.
	queueSize = 1024
)

// The id is new unless another process on the data directory, an id typed
// in the dashboard or a random one from before ids grew took it; then ON
// CONFLICT leaves the row alone, no row is inserted, and Insert moves the
// clock past the ids held (movePastHeldIDs) and tries again.
const insertSQL = "INSERT INTO pets (id, name, categoryId, status, created, updated)" +
	" VALUES (:id, :name, :categoryId, :status, :now, :now) ON CONFLICT (id) DO NOTHING"

// heldIDSQL reads the largest pet id up to a ceiling (movePastHeldIDs).
const heldIDSQL = "SELECT max(id) FROM pets WHERE id <= ?"

// movePastHeldIDs moves the id clock past the largest id the table holds up
// to a minute ahead of now: ids that another process (another instance on
// the data directory, an earlier run, a former leader) gave. A writer does
// so when it starts, and an insert whose id was taken, inside its write
// transaction, so that its next id is free.
func movePastHeldIDs(db interface {
	QueryRow(query string, args ...any) *sql.Row
}) error {
	var held sql.NullString
	ceiling := strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli()*idsPerMilli, 10)
	if err := db.QueryRow(heldIDSQL, ceiling).Scan(&held); err != nil {
		return fmt.Errorf("read the largest pet id: %w", err)
	}
	if n, err := strconv.ParseInt(held.String, 10, 64); err == nil {
		ids.movePast(n)
	}
	return nil
}

// maxIDAttempts bounds the retries on an id collision.
const maxIDAttempts = 5

// ErrStopped is the error of a create asked for after Stop.
var ErrStopped = errors.New("pets: the writer is stopped")

// StartWriter prepares the statements on app's write connection and starts
// the writer. Stop writes what is queued and stops it.
func StartWriter(app core.App) (*Writer, error) {
	return startWriter(app, gatherFor)
}

func startWriter(app core.App, gatherFor time.Duration) (*Writer, error) {
	db, err := database.WriteDB(app)
	if err != nil {
		return nil, err
	}
	w := &Writer{
		app:       app,
		queue:     make(chan *write, queueSize),
		gatherFor: gatherFor,
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	for _, s := range []struct {
		stmt **sql.Stmt
		sql  string
	}{
		{&w.insert, insertSQL},
		{&w.savepoint, "SAVEPOINT pet"},
		{&w.release, "RELEASE pet"},
		{&w.rollbackTo, "ROLLBACK TO pet"},
	} {
		stmt, err := db.Prepare(s.sql)
		if err != nil {
			w.closeStatements()
			return nil, fmt.Errorf("prepare the pets writes: %w", err)
		}
		*s.stmt = stmt
	}
	if err := movePastHeldIDs(db); err != nil {
		w.closeStatements()
		return nil, err
	}
	go w.run()
	return w, nil
}

// OnCreated makes the writer call created, in each caller's goroutine, with
// the rows the caller's work inserted, once their transaction has committed
// and before Run returns. A work that failed, or a transaction that rolled
// back, calls nothing. It is set before the first create.
func (w *Writer) OnCreated(created func([]Row)) { w.created = created }

// OnInserted makes the writer call inserted inside the transaction, once,
// after all its callers' works, with the transaction's app and the rows of
// the works that succeeded, in order (none inserted: no call): what
// inserted writes commits or rolls back with them (the webhooks' outbox),
// in one statement for the batch if it likes, outside every create's
// savepoint. Its error fails the transaction, whose creates then run again
// one by one, so that it fails only the create whose rows it refuses, as
// the work's own error would. It runs in the writer's goroutine, and again
// whenever the works run again. It is set before the first create.
func (w *Writer) OnInserted(inserted func(tx core.App, rows []Row) error) { w.inserted = inserted }

// OnCommitted makes the writer call committed, in its own goroutine, after
// each transaction that commits, with the number of creates it held and how
// long it took from its beginning to its commit. It is set before the first
// create.
func (w *Writer) OnCommitted(committed func(creates int, took time.Duration)) {
	w.committed = committed
}

// OnAcknowledge makes Run wait for acknowledge, in each caller's goroutine,
// once the caller's work has committed and before its rows go to OnCreated's
// function: Run returns acknowledge's error, if any, in place of the work's
// nil (committed, and not acknowledged). Callers call it concurrently: it
// groups them itself (a cluster leader ships one transaction's creates, and
// every other commit made before, at once). It is set before the first
// create.
func (w *Writer) OnAcknowledge(acknowledge func() error) { w.acknowledge = acknowledge }

// Create stores np as a new pet. It returns once the pet is committed.
// ctx carries the request's span, if any; the write is not interrupted.
func (w *Writer) Create(ctx context.Context, np NewPet) (Pet, error) {
	var pet Pet
	err := w.Run(ctx, func(tx *Tx) (err error) {
		pet, err = tx.Insert(np)
		return err
	})
	return pet, err
}

// Run runs work in a write transaction, with the creates that arrive with
// it, and returns work's error once the transaction has committed.
//
// What work writes through its Tx is rolled back when work returns an error
// (or panics); the rest of the transaction goes on. When the transaction
// fails as a whole, each work is run again in a transaction of its own, so
// work must leave nothing behind but what it writes through its Tx and the
// values it sets: it may run more than once, and only the last run counts.
// ctx carries the request's span, if any: the wait for the group commit is
// a span of it, and the acknowledgement another.
func (w *Writer) Run(ctx context.Context, work func(*Tx) error) error {
	_, span := tracing.Start(ctx, "pets.group_commit")
	wr := &write{work: work, done: make(chan struct{}), traceparent: tracing.Traceparent(ctx)}
	w.mu.RLock()
	if w.stopped {
		w.mu.RUnlock()
		span.End()
		return ErrStopped
	}
	w.queue <- wr
	w.mu.RUnlock()
	<-wr.done
	if span.IsRecording() {
		span.SetAttributes(tracing.BatchSize(wr.batch), tracing.CommitMillis(wr.took))
		tracing.Fail(span, wr.err)
	}
	span.End()
	if wr.err != nil {
		return wr.err
	}
	// After this write's transaction has committed.
	var err error
	if w.acknowledge != nil {
		_, ack := tracing.Start(ctx, "cluster.acknowledge")
		err = w.acknowledge()
		tracing.Fail(ack, err)
		ack.End()
	}
	if len(wr.rows) > 0 && w.created != nil {
		w.created(wr.rows)
	}
	return err
}

// Stop writes the creates queued so far and stops the writer. Creates asked
// for after Stop fail with ErrStopped.
func (w *Writer) Stop() {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	w.stopped = true
	w.mu.Unlock()
	close(w.stop)
	<-w.done
	w.closeStatements()
}

func (w *Writer) closeStatements() {
	for _, stmt := range []*sql.Stmt{w.insert, w.savepoint, w.release, w.rollbackTo} {
		if stmt != nil {
			stmt.Close()
		}
	}
}

// Expect announces a create on its way to Create or Run: while creates are
// on their way, a transaction waits for them, at most gatherFor. Creates
// that come one at a time (a client creating pets one after the other) are
// not delayed. The caller calls done when it has its answer, or has decided
// not to create after all.
func (w *Writer) Expect() (done func()) {
	w.expected.Add(1)
	return func() { w.expected.Add(-1) }
}

// run writes the queue in batches until Stop, then what is left.
func (w *Writer) run() {
	defer close(w.done)
	batch := make([]*write, 0, maxBatch)
	gather := time.NewTimer(w.gatherFor)
	gather.Stop()
	for {
		select {
		case wr := <-w.queue:
			batch = append(batch[:0], wr)
		case <-w.stop:
			for len(w.queue) > 0 {
				w.commit(w.fill(batch[:0]))
			}
			return
		}
		batch = w.fill(batch)
		if len(batch) < maxBatch && w.onTheirWay(batch) {
			gather.Reset(w.gatherFor)
		wait:
			for len(batch) < maxBatch {
				select {
				case wr := <-w.queue:
					batch = append(batch, wr)
					if !w.onTheirWay(batch) {
						break wait
					}
				case <-gather.C:
					break wait
				case <-w.stop: // written at once, then drained above
					break wait
				}
			}
			gather.Stop()
		}
		w.commit(batch)
	}
}

// onTheirWay reports whether creates announced with Expect are on their way
// and not in batch yet.
func (w *Writer) onTheirWay(batch []*write) bool {
	return w.expected.Load() > int64(len(batch))
}

// fill adds the queued writes to batch, up to maxBatch, without waiting.
func (w *Writer) fill(batch []*write) []*write {
	for len(batch) < maxBatch {
		select {
		case wr := <-w.queue:
			batch = append(batch, wr)
		default:
			return batch
		}
	}
	return batch
}

// commit runs batch in one transaction and answers each of its callers.
// When the transaction fails as a whole (its commit, or a statement after
// which SQLite rolled it back), nothing of it is stored: each write is run
// again alone, so that it gets its own answer.
func (w *Writer) commit(batch []*write) {
	began := time.Now()
	err := w.transaction(batch)
	if err != nil && len(batch) > 1 {
		for _, wr := range batch {
			w.commit([]*write{wr})
		}
		return
	}
	took := time.Since(began)
	if err == nil && w.committed != nil {
		w.committed(len(batch), took)
	}
	// The transaction has ended: committed, with every write of batch that
	// has no error, or failed, without any. Each caller gets its answer.
	for _, wr := range batch {
		if err != nil && wr.err == nil { // a write that failed keeps its own error
			wr.err = err
		}
		wr.batch, wr.took = len(batch), took
		close(wr.done)
	}
}

// transaction runs batch in one transaction, each write within a savepoint
// when there are several.
func (w *Writer) transaction(batch []*write) error {
	for _, wr := range batch {
		wr.err, wr.rows = nil, nil
	}
	return w.app.RunInTransaction(func(txApp core.App) error {
		sqlTx, err := database.SQLTx(txApp)
		if err != nil {
			return err
		}
		tx := &Tx{app: txApp, sqlTx: sqlTx, insert: sqlTx.Stmt(w.insert)}
		defer tx.insert.Close()
		if len(batch) == 1 { // the transaction is its savepoint
			wr := batch[0]
			tx.write = wr
			if wr.err = runWork(wr.work, tx); wr.err == nil {
				wr.err = w.afterWorks(txApp, batch)
			}
			return wr.err
		}
		savepoint, release, rollbackTo := sqlTx.Stmt(w.savepoint), sqlTx.Stmt(w.release), sqlTx.Stmt(w.rollbackTo)
		defer savepoint.Close()
		defer release.Close()
		defer rollbackTo.Close()
		for _, wr := range batch {
			if _, err := savepoint.Exec(); err != nil {
				return err
			}
			tx.write = wr
			if wr.err = runWork(wr.work, tx); wr.err != nil {
				if _, err := rollbackTo.Exec(); err != nil {
					return err
				}
			}
			if _, err := release.Exec(); err != nil {
				return err
			}
		}
		return w.afterWorks(txApp, batch)
	})
}

// afterWorks calls the inserted callback with the rows of batch's works
// that succeeded.
func (w *Writer) afterWorks(txApp core.App, batch []*write) error {
	if w.inserted == nil {
		return nil
	}
	var rows []Row
	for _, wr := range batch {
		if wr.err == nil {
			rows = append(rows, wr.rows...)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	return w.inserted(txApp, rows)
}

// runWork is work's error, or its panic as an error: a panic in one create
// fails that create, not the writer and its other creates.
func runWork(work func(*Tx) error, tx *Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("pets: a create panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return work(tx)
}

// Insert adds np as a new pet in the transaction.
func (tx *Tx) Insert(np NewPet) (Pet, error) {
	pet := Pet{Name: Name(np.Name), CategoryID: np.CategoryID, Status: NewStatus(np.Status)}
	// As the record save stores the autodate fields: the same instant, text.
	now := types.NowDateTime().String()
	for range maxIDAttempts {
		id := ids.next(time.Now())
		res, err := tx.insert.Exec(sql.Named("id", id), sql.Named("name", pet.Name),
			sql.Named("categoryId", pet.CategoryID), sql.Named("status", pet.Status), sql.Named("now", now))
		if err != nil {
			return Pet{}, err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			pet.ID, _ = strconv.ParseInt(id, 10, 64) // the pattern guarantees 15 digits
			if err == nil {
				tx.write.rows = append(tx.write.rows, Row{Pet: pet, Created: now, Traceparent: tx.write.traceparent})
			}
			return pet, err
		}
		if err := movePastHeldIDs(tx.sqlTx); err != nil {
			return Pet{}, err
		}
	}
	return Pet{}, errors.New("no free pet id after several attempts")
}
