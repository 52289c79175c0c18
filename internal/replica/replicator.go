package replica

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/benbjohnson/litestream/file"
)

// checkEvery is how often the leader reads its term's replica back
// (check): with nothing to ship, no upload would tell that the storage
// fails, and an upload does not tell that it lost what was shipped before.
const checkEvery = 5 * time.Second

// While the storage fails, attempts to ship are retryFirst apart at first,
// then twice as far each time, up to retryMax.
const (
	retryFirst = 500 * time.Millisecond
	retryMax   = 5 * time.Second
)

// Replicator ships the leader's database to its term's replica.
type Replicator struct {
	db      *litestream.DB
	replica *litestream.Replica
	store   *litestream.Store
	log     *slog.Logger

	ctx    context.Context // ends with Close
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	status Status

	// Sync's shipments: one runs at a time, and the callers that come
	// meanwhile wait together for the next.
	shipMu   sync.Mutex
	shipping bool      // a shipment runs
	next     *shipment // the shipment the callers since the running one began wait for; nil: none
	shipFunc func(context.Context) error
}

// shipment is one run of shipNow, shared by every Sync that called before
// it began and after the one before it began.
type shipment struct {
	callers int
	err     error
	done    chan struct{}
}

// shipTimeout bounds one shipment of Sync: storage that takes longer is
// failing.
const shipTimeout = 10 * time.Second

// Status is what a Replicator has shipped. It is read from memory.
type Status struct {
	Term int64
	URL  string // where the term ships

	// Committed is the last transaction Litestream has copied from the WAL;
	// Shipped the last one in the replica.
	Committed, Shipped uint64

	// ShippedAt is when the replica last held every transaction copied
	// from the WAL: the start, before anything was copied.
	ShippedAt time.Time

	// Syncs counts the shipments Sync made: one serves every caller that
	// was waiting when it began.
	Syncs uint64

	// Err says why the last attempt to reach the replica failed: the leader
	// goes on serving, and what it commits meanwhile is lost with it. Nil
	// once an attempt succeeds.
	Err error
}

// StartReplicating ships the database at dbPath to term's path under root,
// which must be empty: a term writes only where no other term did. The
// database need not exist yet (the very first leader creates it when
// PocketBase starts); shipping starts once it does. ctx bounds the start
// only. Storage that does not answer does not stop the start: Status says
// so until it does.
func StartReplicating(ctx context.Context, dbPath string, root Root, cluster string, term int64, log *slog.Logger) (*Replicator, error) {
	if err := checkTerm(root, cluster, term); err != nil {
		return nil, err
	}
	client, err := root.client(cluster, term)
	if err != nil {
		return nil, err
	}
	termURL := root.TermURL(cluster, term)
	log = log.With("term", term, "replica", termURL)

	switch taken, err := holdsTransactions(ctx, client); {
	case err != nil:
		log.Warn("Could not check that the term's replica is empty; replicating anyway", "error", err)
	case taken:
		return nil, fmt.Errorf("term %d's replica %s already holds transactions: a term ships only where no other did", term, termURL)
	}

	// The meta directory holds an earlier term's copies of the WAL, whose
	// transaction ids mean nothing here: this term starts from a snapshot.
	metaPath := filepath.Join(filepath.Dir(dbPath), MetaDirName)
	if err := os.RemoveAll(metaPath); err != nil {
		return nil, fmt.Errorf("clear Litestream's state of an earlier term: %w", err)
	}
	if err := writeLedMark(dbPath, ledMark{Cluster: cluster, Term: term}); err != nil {
		return nil, fmt.Errorf("mark the database as term %d's: %w", term, err)
	}

	db := litestream.NewDB(dbPath)
	db.SetMetaPath(metaPath)
	db.MonitorInterval = MonitorInterval
	db.MinCheckpointPageN = CheckpointPages
	replica := litestream.NewReplicaWithClient(db, client)
	// The Replicator uploads each copy as soon as Litestream makes it
	// (run), and Status knows every failure.
	replica.MonitorEnabled = false
	if fc, ok := client.(*file.ReplicaClient); ok {
		fc.Replica = replica // the replica's files take the database's owner and mode
	}
	db.Replica = replica

	store := litestream.NewStore([]*litestream.DB{db}, litestream.DefaultCompactionLevels)
	// Litestream logs each compaction and snapshot at Info: the leader's
	// log keeps its warnings and errors.
	quiet := slog.New(atLeast{log.Handler(), slog.LevelWarn})
	store.Logger = quiet
	db.SetLogger(quiet)
	if err := store.Open(ctx); err != nil {
		return nil, fmt.Errorf("start Litestream on %s: %w", dbPath, err)
	}

	loopCtx, cancel := context.WithCancel(context.Background())
	r := &Replicator{
		db: db, replica: replica, store: store, log: log,
		ctx: loopCtx, cancel: cancel, done: make(chan struct{}),
		status: Status{Term: term, URL: termURL, ShippedAt: time.Now()},
	}
	r.shipFunc = r.shipNow
	go r.run(loopCtx)
	log.Info("Replicating the database", "path", dbPath)
	return r, nil
}

// holdsTransactions reports whether a replica has any transaction.
func holdsTransactions(ctx context.Context, client litestream.ReplicaClient) (bool, error) {
	for _, level := range []int{0, litestream.SnapshotLevel} {
		itr, err := client.LTXFiles(ctx, level, 0, false)
		if err != nil {
			return false, err
		}
		found := itr.Next()
		if err := itr.Close(); err != nil {
			return false, err
		}
		if found {
			return true, nil
		}
	}
	return false, nil
}

// run uploads each copy Litestream makes of the WAL as soon as it is made,
// checks the replica every checkEvery, and waits longer between attempts
// while the storage fails.
func (r *Replicator) run(ctx context.Context) {
	defer close(r.done)
	var retry time.Duration
	var checked time.Time
	for {
		// Taken before shipping, so that a copy made meanwhile wakes the
		// next round.
		copied := r.db.Notify()
		err := r.ship(ctx)
		if err == nil && time.Since(checked) >= checkEvery {
			err = r.check(ctx)
			checked = time.Now()
		}
		if err != nil {
			retry = min(max(2*retry, retryFirst), retryMax)
			copied = nil // wait out the retry
		} else {
			retry = 0
		}
		select {
		case <-ctx.Done():
			return
		case <-copied:
		case <-time.After(cmp.Or(retry, checkEvery)):
		}
	}
}

// ship uploads what Litestream has copied from the WAL, if anything, and
// records the outcome.
func (r *Replicator) ship(ctx context.Context) error {
	pos, err := r.db.Pos()
	if err != nil {
		return r.record(0, fmt.Errorf("read Litestream's position: %w", err))
	}
	if pos.IsZero() {
		return nil // no database yet, or nothing copied from it
	}
	if shipped := r.replica.Pos(); !shipped.IsZero() && shipped.TXID >= pos.TXID {
		return nil
	}
	if err := r.replica.Sync(ctx); err != nil {
		if ctx.Err() != nil {
			return err // stopped, or the caller gave up: nothing failed
		}
		return r.record(uint64(pos.TXID), fmt.Errorf("ship to the replica: %w", err))
	}
	return r.record(uint64(pos.TXID), nil)
}

// check reads the term's replica back: that it answers, and that it still
// holds the term's first transaction. A replica emptied or replaced under
// the leader (a volume unmounted, a prefix deleted) does not, and would
// restore nothing: the leader then ships a new snapshot of the database to
// it, from which it restores again.
func (r *Replicator) check(ctx context.Context) error {
	if r.replica.Pos().IsZero() {
		return nil // nothing shipped yet
	}
	whole, err := holdsFirstTransaction(ctx, r.replica.Client)
	if ctx.Err() != nil {
		return ctx.Err() // stopped, not failed
	}
	if err != nil {
		return r.record(0, fmt.Errorf("reach the replica: %w", err))
	}
	if !whole {
		r.log.Error("The term's replica has lost its first transactions (its storage was emptied or replaced): shipping a new snapshot")
		if _, err := r.db.Snapshot(ctx); err != nil {
			return r.record(0, fmt.Errorf("ship a new snapshot to a replica that lost its first transactions: %w", err))
		}
	}
	return r.record(0, nil)
}

// holdsFirstTransaction reports whether a replica holds a file that starts
// at the first transaction: its snapshots do, and until the first one, the
// compactions and level 0.
func holdsFirstTransaction(ctx context.Context, client litestream.ReplicaClient) (bool, error) {
	levels := []int{litestream.SnapshotLevel}
	for _, l := range litestream.DefaultCompactionLevels {
		levels = append(levels, l.Level)
	}
	for _, level := range levels {
		itr, err := client.LTXFiles(ctx, level, 0, false)
		if err != nil {
			return false, err
		}
		found := false
		for !found && itr.Next() {
			found = itr.Item().MinTXID == 1
		}
		if err := itr.Close(); err != nil {
			return false, err
		}
		if found {
			return true, nil
		}
	}
	return false, nil
}

// record keeps the outcome of an attempt to ship for Status, and logs a
// change between failing and shipping once.
func (r *Replicator) record(committed uint64, err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	was := r.status.Err
	if committed > r.status.Committed {
		r.status.Committed = committed
	}
	r.status.Err = err
	if err == nil {
		r.status.Shipped = uint64(r.replica.Pos().TXID)
		if r.status.Shipped >= r.status.Committed {
			r.status.ShippedAt = time.Now()
		}
	}
	switch {
	case err != nil && was == nil:
		r.log.Error("Could not ship to the replica: the leader goes on serving, and what it commits is lost with it until shipping resumes", "error", err)
	case err == nil && was != nil:
		r.log.Info("Shipping to the replica again", "shipped", r.status.Shipped)
	}
	return err
}

// Sync ships every transaction committed before it was called, whatever
// the intervals, and returns once the replica holds them, or ctx ends.
// Concurrent callers share shipments: a shipment serves every caller that
// called before it began, so callers that come while one runs wait together
// for the next one, and a shipment is made for a group of callers, never
// for each.
func (r *Replicator) Sync(ctx context.Context) error {
	r.shipMu.Lock()
	s := r.next
	if s == nil {
		s = &shipment{done: make(chan struct{})}
		r.next = s
		if !r.shipping {
			r.startShipment()
		}
	}
	s.callers++
	r.shipMu.Unlock()
	select {
	case <-s.done:
		return s.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startShipment runs the waiting shipment, then the next one if callers
// came meanwhile. Called with shipMu held.
func (r *Replicator) startShipment() {
	s := r.next
	r.next, r.shipping = nil, true
	go func() {
		ctx, cancel := context.WithTimeout(r.ctx, shipTimeout)
		s.err = r.shipFunc(ctx)
		cancel()
		r.mu.Lock()
		r.status.Syncs++
		r.mu.Unlock()
		close(s.done)
		r.shipMu.Lock()
		defer r.shipMu.Unlock()
		if r.next != nil {
			r.startShipment()
		} else {
			r.shipping = false
		}
	}()
}

// shipNow copies what is committed from the WAL and uploads it.
func (r *Replicator) shipNow(ctx context.Context) error {
	err := r.db.Sync(ctx)
	if err == nil {
		err = r.ship(ctx)
	}
	switch {
	case err == nil || r.ctx.Err() != nil: // shipped, or stopped: nothing failed
		return err
	case ctx.Err() != nil:
		return r.record(0, fmt.Errorf("ship to the replica: no answer within %s", shipTimeout))
	case r.Status().Err == nil: // the WAL's copy failed, not the upload
		return r.record(0, fmt.Errorf("copy the WAL: %w", err))
	}
	return err
}

// Unshipped is how long the oldest transaction copied from the WAL and not
// in the replica has waited for its shipment, at most: zero while the
// replica holds every one. It asks Litestream what it has copied, as an
// upload that hangs records nothing in Status.
func (r *Replicator) Unshipped() time.Duration {
	pos, err := r.db.Pos()
	st := r.Status()
	if err != nil || pos.IsZero() || uint64(pos.TXID) <= st.Shipped {
		return 0
	}
	return time.Since(st.ShippedAt)
}

// Status returns what has been shipped, and why shipping fails if it does.
func (r *Replicator) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

// Close ships what is left, within ctx, and stops. Call it once
// PocketBase's connections to the database are closed: Litestream's file
// descriptor holds the process's SQLite locks.
func (r *Replicator) Close(ctx context.Context) error {
	r.cancel()
	<-r.done
	err := r.store.Close(ctx)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("ship what was left before the deadline: %w", err)
	}
	return err
}
