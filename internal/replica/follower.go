package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/superfly/ltx"

	"petstore/internal/database"
)

// promoteFollowInterval is how often Litestream looks for the term's last
// transactions while Promote waits for them.
const promoteFollowInterval = 25 * time.Millisecond

// Follower keeps a copy of a term's replica in a data directory.
//
// Until the term has shipped its first snapshot, a follower that already
// holds a copy of an earlier term keeps it, and goes on following that
// term: if the new leader is lost before it ships anything, Promote still
// yields everything the earlier term shipped.
type Follower struct {
	root    Root
	cluster string
	term    int64
	dbPath  string
	log     *slog.Logger

	cancel context.CancelFunc // stops run
	done   chan struct{}

	mu     sync.Mutex
	copyOf *source // the term whose copy dbPath holds
	lag    Lag

	markMu   sync.Mutex // one writer of the mark at a time
	leader   string     // the leader named in the mark
	promoted bool       // the mark is gone for good
}

// source is a term's replica.
type source struct {
	term    int64
	client  litestream.ReplicaClient
	replica *litestream.Replica
}

// Lag is how far a follower's copy is behind its term's replica. It is read
// from memory, checked every FollowInterval.
type Lag struct {
	// Term is the term whose replica the copy follows: an earlier one while
	// the term followed has shipped nothing yet.
	Term int64

	// Applied is the last transaction applied to the copy; Shipped the
	// last one in the replica at CheckedAt. Applied 0 means no copy: such a
	// node has nothing to promote (ErrNothingShipped) even when Shipped is
	// 0 too, and is no candidate while another node holds a copy.
	Applied, Shipped uint64

	// Transactions is Shipped - Applied. Seconds is how long the oldest
	// transaction not yet applied has been in the replica (0 when none).
	Transactions uint64
	Seconds      float64

	CheckedAt time.Time

	// Err says why the replica could not be read at CheckedAt, or why the
	// copy could not be restored: the figures above are then stale.
	Err error
}

// followMark is written beside a follower's copy (<db>-follow): the copy
// holds only what its term shipped, so it is replaced freely, where any
// other database is set aside. It names the leader as the node last knew
// it, for the commands that refuse the copy to name.
type followMark struct {
	Cluster string `json:"cluster"`
	Term    int64  `json:"term"`
	Leader  string `json:"leader,omitempty"`
}

func markPath(dbPath string) string { return dbPath + "-follow" }

// readMark returns the mark beside dbPath, or nil if there is none.
func readMark(dbPath string) (*followMark, error) {
	b, err := os.ReadFile(markPath(dbPath))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var m followMark
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("read %s: %w", markPath(dbPath), err)
	}
	return &m, nil
}

func writeMark(dbPath string, m followMark) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp := markPath(dbPath) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, markPath(dbPath))
}

// Following reports whether the data directory holds a follower's copy of
// the replica, which only the follower writes: a command that would write
// to the database must refuse there. leader is the leader as the follower
// last recorded it (SetLeader), empty when it knew none.
func Following(dataDir string) (following bool, leader string, err error) {
	m, err := readMark(filepath.Join(dataDir, database.DataFile))
	if m == nil {
		return false, "", err
	}
	return true, m.Leader, err
}

// removeCopy removes a follower's copy and what goes with it.
func removeCopy(dbPath string) error {
	var errs []error
	for _, p := range []string{dbPath, dbPath + "-wal", dbPath + "-shm", litestream.TXIDPath(dbPath), dbPath + ".tmp", ledPath(dbPath)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// StartFollowing restores term's replica under root into dbPath, then
// applies what the term ships every FollowInterval, until Promote or Close.
// An empty data directory joins this way. A copy of the same term resumes
// where it was; a copy of an earlier term is kept, and followed, until the
// term has shipped its first snapshot; any other database at dbPath (a
// former leader's) is set aside (SetAside) and its new path logged. ctx
// bounds the start only.
func StartFollowing(ctx context.Context, root Root, cluster string, term int64, dbPath string, log *slog.Logger) (*Follower, error) {
	if err := checkTerm(root, cluster, term); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	log = log.With("term", term, "replica", root.TermURL(cluster, term))
	target, err := newSource(root, cluster, term, log)
	if err != nil {
		return nil, err
	}
	copyOf := target

	mark, err := readMark(dbPath)
	if err != nil {
		return nil, err
	}
	_, statErr := os.Stat(dbPath)
	if statErr == nil && (mark == nil || mark.Cluster != cluster) {
		// A former leader's database that its term's replica holds whole
		// holds nothing to keep: it goes, rather than aside.
		switch whole, term, err := shippedWhole(ctx, root, cluster, dbPath, log); {
		case err != nil:
			log.Warn("Could not compare the database with its term's replica; setting it aside", "error", err)
		case whole:
			if err := removeCopy(dbPath); err != nil {
				return nil, err
			}
			log.Info("The database was a leader's whose term's replica holds it whole: removed, nothing set aside", "its_term", term)
			statErr = os.ErrNotExist
		}
	}
	switch {
	case statErr == nil && (mark == nil || mark.Cluster != cluster):
		aside, err := setAside(dbPath)
		if err != nil {
			return nil, err
		}
		log.Warn("Set aside a database that is not a copy of the cluster's replica: it may hold writes never shipped", "path", aside)
	case statErr == nil && mark.Term != term:
		if copyOf, err = newSource(root, cluster, mark.Term, log); err != nil {
			return nil, err
		}
	case statErr == nil:
		// a copy of this term: Litestream resumes after its last transaction
	case errors.Is(statErr, os.ErrNotExist):
		if err := removeCopy(dbPath); err != nil {
			return nil, err
		}
	default:
		return nil, statErr
	}
	if err := os.MkdirAll(filepath.Dir(dbPath), 0o700); err != nil {
		return nil, err
	}
	if err := writeMark(dbPath, followMark{Cluster: cluster, Term: copyOf.term}); err != nil {
		return nil, fmt.Errorf("mark %s as a follower's copy: %w", dbPath, err)
	}

	f := &Follower{root: root, cluster: cluster, term: term, dbPath: dbPath, log: log, copyOf: copyOf}
	f.lag.Term = copyOf.term
	f.start()
	if copyOf != target {
		log.Info("Following an earlier term until this one ships its first snapshot", "earlier_term", copyOf.term)
	}
	return f, nil
}

func newSource(root Root, cluster string, term int64, log *slog.Logger) (*source, error) {
	client, err := root.client(cluster, term)
	if err != nil {
		return nil, err
	}
	client.SetLogger(log)
	// Litestream logs every transaction its follow mode applies, at Info:
	// the follower's log keeps its warnings and errors.
	db := litestream.NewDB("")
	db.Logger = slog.New(atLeast{log.Handler(), slog.LevelWarn})
	return &source{term: term, client: client, replica: litestream.NewReplicaWithClient(db, client)}, nil
}

// atLeast passes on the records of a handler from level up.
type atLeast struct {
	slog.Handler
	level slog.Level
}

func (h atLeast) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level && h.Handler.Enabled(ctx, l)
}

func (h atLeast) WithAttrs(as []slog.Attr) slog.Handler {
	return atLeast{h.Handler.WithAttrs(as), h.level}
}

func (h atLeast) WithGroup(name string) slog.Handler {
	return atLeast{h.Handler.WithGroup(name), h.level}
}

// start runs the follower until stop.
func (f *Follower) start() {
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel, f.done = cancel, make(chan struct{})
	go f.run(ctx)
}

// stop stops the follower and waits for it.
func (f *Follower) stop() {
	f.cancel()
	<-f.done
}

// run follows the copy's term and checks the lag until ctx ends; while the
// copy is of an earlier term, it switches to the followed term once that
// has shipped.
func (f *Follower) run(ctx context.Context) {
	defer close(f.done)
	for {
		f.mu.Lock()
		src := f.copyOf
		f.mu.Unlock()

		followCtx, stopFollowing := context.WithCancel(ctx)
		followed := make(chan struct{})
		go func() { defer close(followed); f.follow(followCtx, src, FollowInterval) }()
		target := f.watch(ctx, src)
		stopFollowing()
		<-followed
		if target == nil {
			return
		}
		if err := f.switchTo(target); err != nil {
			f.setErr(fmt.Errorf("switch to term %d's replica: %w", target.term, err))
			select {
			case <-ctx.Done():
				return
			case <-time.After(FollowInterval):
			}
		}
	}
}

// watch checks the lag every FollowInterval until ctx ends (nil), or, while
// the copy is of an earlier term, until the followed term has shipped: it
// returns that term's replica.
func (f *Follower) watch(ctx context.Context, src *source) *source {
	var target *source
	if src.term != f.term {
		var err error
		if target, err = newSource(f.root, f.cluster, f.term, f.log); err != nil {
			f.setErr(err)
			target = nil
		}
	}
	tick := time.NewTicker(FollowInterval)
	defer tick.Stop()
	for {
		f.checkLag(ctx, src)
		if target != nil {
			shipped, err := holdsTransactions(ctx, target.client)
			if err == nil && shipped {
				return target
			}
			if err != nil && ctx.Err() == nil {
				f.log.Warn("Could not read the followed term's replica", "error", err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// switchTo replaces the copy of an earlier term with target's (restored
// next by follow). Nothing follows meanwhile.
func (f *Follower) switchTo(target *source) error {
	if err := removeCopy(f.dbPath); err != nil {
		return err
	}
	if err := f.writeMark(target.term); err != nil {
		return err
	}
	f.mu.Lock()
	f.copyOf = target
	f.lag = Lag{Term: target.term}
	f.mu.Unlock()
	f.log.Info("The term has shipped its first snapshot: following it")
	return nil
}

// SetLeader records leader (how the node names it: "node2 at
// http://10.0.0.2:8090 (term 42)") in the copy's mark, for the commands
// that refuse the copy to name. After Promote it does nothing.
func (f *Follower) SetLeader(leader string) error {
	f.mu.Lock()
	term := f.copyOf.term
	f.mu.Unlock()
	f.markMu.Lock()
	defer f.markMu.Unlock()
	f.leader = leader
	if f.promoted {
		return nil
	}
	return writeMark(f.dbPath, followMark{Cluster: f.cluster, Term: term, Leader: leader})
}

// writeMark marks the copy as term's, naming the leader last recorded.
func (f *Follower) writeMark(term int64) error {
	f.markMu.Lock()
	defer f.markMu.Unlock()
	return writeMark(f.dbPath, followMark{Cluster: f.cluster, Term: term, Leader: f.leader})
}

// follow restores src's replica into dbPath and applies what it ships,
// with Litestream's follow mode, until ctx ends; it starts again after a
// failure.
func (f *Follower) follow(ctx context.Context, src *source, interval time.Duration) {
	for ctx.Err() == nil {
		// A copy without the transaction it is at cannot resume: it is
		// restored again.
		if applied, err := litestream.ReadTXIDFile(f.dbPath); err == nil && applied == 0 {
			if err := removeCopy(f.dbPath); err != nil {
				f.setErr(fmt.Errorf("remove an incomplete copy: %w", err))
			}
		}
		opt := litestream.NewRestoreOptions()
		opt.OutputPath = f.dbPath
		opt.Follow = true
		opt.FollowInterval = interval
		opt.IntegrityCheck = litestream.IntegrityCheckQuick
		err := src.replica.Restore(ctx, opt)
		if ctx.Err() != nil {
			return
		}
		if err != nil && !errors.Is(err, litestream.ErrNoSnapshots) && !errors.Is(err, litestream.ErrTxNotAvailable) {
			f.setErr(fmt.Errorf("restore term %d's replica: %w", src.term, err))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

func (f *Follower) setErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lag.Err == nil {
		f.log.Error("Could not follow the replica", "error", err)
	}
	f.lag.Err = err
}

// shipped returns the last transaction in src's replica after applied, and
// when the first one after applied was shipped (zero if none).
func shipped(ctx context.Context, src *source, applied ltx.TXID) (last ltx.TXID, firstAfter time.Time, err error) {
	// Level 0 holds every transaction shipped in the last minutes, and
	// always its newest.
	itr, err := src.client.LTXFiles(ctx, 0, applied, false)
	if err != nil {
		return 0, time.Time{}, err
	}
	for itr.Next() {
		info := itr.Item()
		if info.MaxTXID > applied && (firstAfter.IsZero() || info.CreatedAt.Before(firstAfter)) {
			firstAfter = info.CreatedAt
		}
		last = max(last, info.MaxTXID)
	}
	if err := itr.Close(); err != nil {
		return 0, time.Time{}, err
	}
	if last != 0 {
		return last, firstAfter, nil
	}
	// Nothing at level 0 from applied on: the copy is older than level 0's
	// files, or the term has shipped nothing.
	for level := 1; level <= litestream.SnapshotLevel; level++ {
		info, err := src.replica.MaxLTXFileInfo(ctx, level)
		if err != nil {
			return 0, time.Time{}, err
		}
		if info.MaxTXID > last {
			last, firstAfter = info.MaxTXID, info.CreatedAt
		}
	}
	return last, firstAfter, nil
}

// checkLag reads how far the copy is behind src's replica.
func (f *Follower) checkLag(ctx context.Context, src *source) {
	applied, err := litestream.ReadTXIDFile(f.dbPath)
	if err == nil {
		if _, statErr := os.Stat(f.dbPath); statErr != nil {
			applied = 0 // a sidecar left without its copy
		}
	}
	var last ltx.TXID
	var firstAfter time.Time
	if err == nil {
		last, firstAfter, err = shipped(ctx, src, applied)
	}
	if ctx.Err() != nil {
		return
	}
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		if f.lag.Err == nil {
			f.log.Error("Could not read the replica's position", "error", err)
		}
		f.lag.Err, f.lag.CheckedAt = err, now
		return
	}
	if f.lag.Err != nil {
		f.log.Info("Reading the replica again", "applied", applied, "shipped", last)
	}
	l := Lag{Term: src.term, Applied: uint64(applied), Shipped: uint64(max(last, applied)), CheckedAt: now}
	l.Transactions = l.Shipped - l.Applied
	if l.Transactions > 0 && !firstAfter.IsZero() {
		l.Seconds = max(now.Sub(firstAfter).Seconds(), 0)
	}
	f.lag = l
}

// Lag returns how far the copy was behind the replica at the last check.
func (f *Follower) Lag() Lag {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lag
}

// ErrNothingShipped is Promote's answer when the follower has no copy and
// the term has shipped nothing: a new node that joined a term whose leader
// was lost before its first snapshot. Its data directory is empty; only
// the very first leader of a cluster starts from an empty database.
var ErrNothingShipped = errors.New("the term has shipped nothing, and this node holds no copy of an earlier term")

// Promote applies every transaction the term shipped (or, if it shipped
// nothing, the earlier term whose copy dbPath holds) and stops following.
// When it returns nil, dbPath is a complete, closed database, without the
// follower's files beside it, and the Follower is done. Call it once the
// term's leader is gone: what the leader ships later is not applied. On
// error (ErrNothingShipped among them) the Follower goes on following.
// A replica that cannot be restored fails Promote at once; one that answers
// slowly holds it until ctx ends. Promote and Close are not called at the
// same time.
func (f *Follower) Promote(ctx context.Context) error {
	f.stop()
	f.mu.Lock()
	src := f.copyOf
	f.mu.Unlock()
	if src.term != f.term {
		// The term may have shipped its first snapshot since the last look.
		target, err := newSource(f.root, f.cluster, f.term, f.log)
		if err != nil {
			f.start()
			return err
		}
		if taken, err := holdsTransactions(ctx, target.client); err != nil {
			f.start()
			return fmt.Errorf("read term %d's replica: %w", f.term, err)
		} else if taken {
			if err := f.switchTo(target); err != nil {
				f.start()
				return err
			}
			src = target
		}
	}
	for {
		applied, err := litestream.ReadTXIDFile(f.dbPath)
		if err != nil {
			f.start()
			return err
		}
		last, _, err := shipped(ctx, src, applied)
		if err != nil {
			f.start()
			return fmt.Errorf("read term %d's replica: %w", src.term, err)
		}
		_, statErr := os.Stat(f.dbPath)
		if last == 0 && errors.Is(statErr, os.ErrNotExist) {
			f.start()
			return ErrNothingShipped
		}
		// With Litestream stopped, a copy at the replica's last transaction
		// has every file applied whole: a file applied in part when it
		// stopped would be a later one.
		if statErr == nil && applied >= last {
			break
		}
		if err := f.catchUp(ctx, src, last); err != nil {
			f.start()
			return err
		}
	}
	f.markMu.Lock()
	defer f.markMu.Unlock()
	f.promoted = true
	for _, p := range []string{litestream.TXIDPath(f.dbPath), markPath(f.dbPath)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	f.log.Info("Promoted the follower's copy", "copy_of_term", src.term)
	return nil
}

// catchUp follows src until the copy has applied transaction last, then
// stops Litestream.
func (f *Follower) catchUp(ctx context.Context, src *source, last ltx.TXID) error {
	f.mu.Lock()
	f.lag.Err = nil // follow reports its failures here
	f.mu.Unlock()
	followCtx, stopFollowing := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); f.follow(followCtx, src, promoteFollowInterval) }()
	defer func() { stopFollowing(); <-done }()
	tick := time.NewTicker(promoteFollowInterval)
	defer tick.Stop()
	for {
		if applied, err := litestream.ReadTXIDFile(f.dbPath); err == nil && applied >= last {
			return nil
		}
		if err := f.Lag().Err; err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("apply term %d's transactions up to %s: %w", src.term, last, ctx.Err())
		case <-tick.C:
		}
	}
}

// Close stops following. The copy stays, marked, for a later StartFollowing
// to resume or replace.
func (f *Follower) Close() error {
	f.stop()
	return nil
}
