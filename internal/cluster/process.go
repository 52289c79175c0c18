package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Process is this process as a node, from before PocketBase opens the
// data directory: it takes part in the election and follows the leader's
// data, while the gate (internal/clustergate) answers on --http. Once the
// node wins, the data is promoted, and PocketBase serves as the leader. A
// leader that loses its lease stops writing at once, ships what it
// committed, and steps down (ErrSteppedDown): PocketBase, which holds the
// database open for writing, cannot become a follower in place, so main
// replaces the process with a fresh one of the same command line.
type Process struct {
	Node *Node
	Data *Data
	log  *slog.Logger

	cancel  context.CancelFunc // ends Run and Follow
	tasks   sync.WaitGroup     // Run and Follow
	runDone chan error
	elected chan int64

	// steppedDown closes once the node stepped down, after which it never
	// campaigns again; onSteppedDown is then called once.
	steppedDown   chan struct{}
	stepOnce      sync.Once
	onSteppedDown func()
}

// ErrSteppedDown is the error of a node that stepped down after it won (its
// lease lost, or its term over before it served): the process is to be
// replaced by a fresh one, which follows.
var ErrSteppedDown = errors.New("cluster: stepped down; the process restarts as a follower")

// Start makes the node of cfg and starts it: the election, and the
// following of the data in dataDir. It refuses to start when etcd refuses
// the node (Check). steppedDown is called once the node has stepped down
// after it won (ErrSteppedDown): the caller replaces the process.
func Start(cfg Config, dataDir string, log *slog.Logger, steppedDown func()) (p *Process, err error) {
	p = &Process{log: log, elected: make(chan int64, 1), runDone: make(chan error, 1), steppedDown: make(chan struct{}), onSteppedDown: steppedDown}
	p.Data = NewData(cfg.Replica, cfg.Name, dataDir, cfg.SetAsideRetention, log)
	p.Node = New(cfg, log, Options{
		Eligible:      p.eligible,
		Lag:           p.Data.Lag,
		Replica:       p.Data.Replica,
		Unshipped:     p.Data.Unshipped,
		OnElected:     func(term int64) { p.elected <- term },
		OnSteppedDown: func(term int64) { p.stepDown(term) },
	})
	check, cancelCheck := context.WithTimeout(context.Background(), cfg.TTL)
	err = p.Node.Check(check)
	cancelCheck()
	if err != nil {
		_ = p.Node.Close()
		return nil, err
	}
	if cfg.Secret == nil {
		log.Warn("Cluster: the nodes are not authenticated (--cluster-insecure-peers): whoever can write to etcd can send every follower's requests, " +
			"API keys and passwords included, to an address of theirs, and whoever reaches the leader can pass for a node; give every node --cluster-secret-file")
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.tasks.Go(func() { p.runDone <- p.Node.Run(ctx) })
	p.tasks.Go(func() { p.Data.Follow(ctx, p.Node) })
	log.Info("Cluster: node started", "node", cfg.NodeName, "cluster", cfg.Name, "advertise", cfg.AdvertiseURL)
	return p, nil
}

// promoteTimeout bounds a winner's promotion (applying what the last term
// shipped, and starting its own term's shipping): a replica that answers
// slower than that holds the whole cluster without a leader, and another
// node may reach it better.
var promoteTimeout = 30 * time.Second

// eligible says why this node may not campaign now, or nil: its copy must
// follow the replica closely (Data.Eligible), and the replica must hold the
// leader's commits but those of the last MaxLagOnFailover, as the leader
// last said: a copy promoted from a replica the leader stopped shipping to
// would lose more than a failover may.
func (p *Process) eligible() error {
	status := p.Node.Status()
	if u := status.LeaderUnshipped; u > MaxLagOnFailover {
		return fmt.Errorf("the leader last said its commits of the last %s were not in the replica, more than %s", u, MaxLagOnFailover)
	}
	return p.Data.Eligible(status.Served)
}

// WaitElected waits until this node wins the election, then stops
// following, promotes the copy and starts shipping the new term; it returns
// the term. It returns early with Run's error (a taken node name), when ctx
// ends, or with ErrSteppedDown when the node steps down meanwhile. A
// winner that cannot promote within promoteTimeout gives the election up:
// it steps down (ErrSteppedDown), so that another node wins at once, and
// the process, replaced, follows again.
func (p *Process) WaitElected(ctx context.Context) (int64, error) {
	var term int64
	select {
	case term = <-p.elected:
	case err := <-p.runDone:
		return 0, err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	promoting, cancel := context.WithTimeout(ctx, promoteTimeout)
	var watch sync.WaitGroup
	watch.Go(func() {
		select {
		case <-p.steppedDown:
			cancel()
		case <-promoting.Done():
		}
	})
	defer watch.Wait()
	defer cancel()
	p.Data.stopFollowing()
	err := p.Data.Promote(promoting)
	if err == nil {
		err = p.Data.Replicate(promoting, term)
	}
	select {
	case <-p.steppedDown:
		return 0, ErrSteppedDown
	default:
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return 0, err
	case err != nil:
		p.log.Error("Cluster: cannot promote; giving the election up", "term", term, "error", err.Error())
		p.giveUp(term, fmt.Errorf("cannot promote: %w", err))
		return 0, ErrSteppedDown
	}
	return term, nil
}

// FirstShipmentTimeout bounds how long a new leader waits for its term's
// replica to hold its database before it serves (Serving): storage that
// takes longer is failing, or the database is too large for it to copy in
// that time, and the cluster is better served with writes than without.
const FirstShipmentTimeout = 30 * time.Second

// servingRecordTimeout bounds the record in etcd that the node serves.
const servingRecordTimeout = 5 * time.Second

// Serving records that PocketBase serves: the node is the leader. A term's
// replica holds nothing until its leader's first shipment, a copy of the
// whole database, lands there, and until then a node that promotes from
// the replica finds none of the term's writes; the node therefore ships
// first, and opens its fence once the replica holds the database, so that
// a leader lost later loses at most what it committed within
// replica.MonitorInterval of the loss. When the shipment fails or takes longer than
// FirstShipmentTimeout, the node serves anyway, and says so: what it
// commits until shipping works is lost with it. A node that cannot record
// that it serves (its term ended meanwhile, or etcd does not answer) never
// writes: it restarts as a follower.
func (p *Process) Serving() {
	start := time.Now()
	shipping, cancel := context.WithTimeout(context.Background(), FirstShipmentTimeout)
	err := p.Data.Sync(shipping)
	cancel()
	if err != nil {
		p.log.Error("Cluster: the term's first shipment did not reach the replica; serving anyway, and what this node commits until shipping works is lost with it",
			"term", p.Node.Status().Term, "took", time.Since(start).Round(time.Millisecond).String(), "error", err.Error())
	} else {
		p.log.Info("Cluster: the term's replica holds the database", "term", p.Node.Status().Term, "took", time.Since(start).Round(time.Millisecond).String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), servingRecordTimeout)
	defer cancel()
	if err := p.Node.Serving(ctx); err != nil {
		p.log.Error("Cluster: cannot serve as the leader", "error", err.Error())
		p.giveUp(p.Node.Status().Term, fmt.Errorf("cannot serve: %w", err))
	}
}

// ShipTimeout bounds how long a write waits for its shipment under
// --cluster-sync (Shipped). A file replica ships in milliseconds and S3 in
// tens to hundreds of them; storage slower than this is failing, and the
// client is better told so than held.
const ShipTimeout = 2 * time.Second

// ErrNotShipped is Shipped's error when the replica does not hold the
// caller's commits within ShipTimeout: they are committed here, and a
// failover may lose them.
var ErrNotShipped = errors.New("cluster: not shipped to the replica")

// ErrNotLeading is the error of commits that ended, or were shipped, once
// the lease was no longer provably held (Acknowledged, Shipped): a node
// that promoted meanwhile may have applied the term's replica before they
// reached it.
var ErrNotLeading = errors.New("cluster: shipped, but no longer leading")

// Shipped returns once every transaction committed before the call is in
// the replica and the lease is still provably held: a node that promotes
// later applies them, so a failover loses none. Concurrent callers share
// shipments (replica.Replicator.Sync). It fails with ErrNotShipped or
// ErrNotLeading.
func (p *Process) Shipped(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ShipTimeout)
	defer cancel()
	if err := p.Data.Sync(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrNotShipped, err)
	}
	// Held now, so no node has won the election since the shipment began:
	// the one that wins next promotes with it.
	if !p.Node.MayWrite() {
		return ErrNotLeading
	}
	return nil
}

// Acknowledged says whether a create whose transaction has committed may
// be acknowledged: only if the fence still held when its commit had
// finished (ErrNotLeading otherwise). The fence is checked before the
// commit too, but a pause between that check and the commit's end (a VM
// freeze, a long GC or I/O stall) may let the commit land after a newer
// leader began: that create is set aside with this node's copy when it
// follows, and never acknowledged. Under --cluster-sync, a create is
// acknowledged once shipped to the replica while the lease is held
// (Shipped: ErrNotShipped, ErrNotLeading).
func (p *Process) Acknowledged() error {
	if !p.Node.cfg.Sync {
		if !p.Node.MayWrite() {
			return ErrNotLeading
		}
		return nil
	}
	return p.Shipped(context.Background())
}

// Handover hands the leadership over on SIGTERM: writes stop at once,
// settle waits for the writes that passed the fence before and are still
// committing, the last transaction is shipped, and the node resigns, so
// that a follower promotes with everything.
func (p *Process) Handover(ctx context.Context, settle func() error) error {
	p.Node.fence.close()
	if err := settle(); err != nil {
		p.log.Error("Cluster: could not wait for the writes in flight before the handover", "error", err.Error())
	}
	syncErr := p.Data.Sync(ctx)
	if syncErr != nil {
		p.log.Error("Cluster: the last transactions could not be shipped before the handover", "error", syncErr.Error())
	}
	return errors.Join(syncErr, p.Node.Resign(ctx))
}

// Close stops the node and the following of its data, waiting for both,
// and leaves the cluster (Leave).
func (p *Process) Close() error {
	p.cancel()
	p.tasks.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = p.Node.Leave(ctx) // revoked already after a handover
	return errors.Join(p.Data.Close(), p.Node.Close())
}

// stepDown ends the node's part in the cluster once a leader has lost its
// lease, or could not serve its term: its fence is closed, and PocketBase,
// which holds the database open for writing, cannot become a follower in
// place. What it acknowledged and has not shipped yet is shipped first, for
// at most restartSyncTimeout, to its own term's path: a node that promotes
// later applies it, and one that has promoted already no longer follows
// that term, so nothing is shipped over a new leader's writes. The node
// then never campaigns again, and the caller replaces the process
// (onSteppedDown).
func (p *Process) stepDown(term int64) {
	ctx, cancel := context.WithTimeout(context.Background(), restartSyncTimeout)
	if err := p.Data.Sync(ctx); err != nil {
		p.log.Error("Cluster: could not ship the last transactions before restarting", "term", term, "error", err.Error())
	}
	cancel()
	p.Node.revokeLease(p.Node.cfg.TTL / 3) // shipped: the next leader need not wait this node's lease out
	p.log.Warn("Cluster: restarting as a follower", "term", term)
	p.cancel()
	p.stepOnce.Do(func() {
		// The caller hears of it before WaitElected returns ErrSteppedDown.
		if p.onSteppedDown != nil {
			p.onSteppedDown()
		}
		close(p.steppedDown)
	})
}

// giveUp gives term up through the node's HA loop, which steps down
// (stepDown, through Options.OnSteppedDown), and returns once the node has
// stepped down. A loop that does not take it, or ends without stepping
// down (the node is stopping), leaves the step-down to giveUp.
func (p *Process) giveUp(term int64, why error) {
	taken, ended := p.Node.giveUp(term, why)
	if taken {
		select {
		case <-p.steppedDown:
			return
		case <-ended:
		}
	}
	select {
	case <-p.steppedDown:
	default:
		p.stepDown(term)
	}
}

// restartSyncTimeout bounds the shipping of a leader's last transactions
// before it restarts as a follower.
const restartSyncTimeout = 2 * time.Second
