package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"petstore/internal/database"
	"petstore/internal/replica"
)

// MaxLagOnFailover is how far behind the replica a follower's copy may be
// and still campaign (as Patroni's maximum_lag_on_failover): a node further
// behind stands aside, since it would lose what it has not applied.
const MaxLagOnFailover = 5 * time.Second

// Data is this node's copy of the cluster's data: it follows the replica of
// the term served while the node does not lead, promotes the copy when the
// node wins, and ships the database while it leads.
type Data struct {
	root     replica.Root
	cluster  string
	dbPath   string
	log      *slog.Logger
	setAside time.Duration // how long databases set aside are kept; 0: every one

	mu         sync.Mutex
	follower   *replica.Follower
	followed   int64  // the term the follower follows
	leader     string // the leader named in the follower's mark
	promoting  bool   // stopFollowing was called: no term is followed any more
	replicator *replica.Replicator
}

// NewData is the data of the node whose data directory is dataDir, which
// keeps the databases it sets aside for setAside (0: every one).
func NewData(root replica.Root, cluster, dataDir string, setAside time.Duration, log *slog.Logger) *Data {
	return &Data{root: root, cluster: cluster, dbPath: filepath.Join(dataDir, database.DataFile), setAside: setAside, log: log}
}

// pruneEvery is how often the databases set aside are looked at for
// removal (pruneSetAside), from the start.
const pruneEvery = time.Hour

// Follow follows the replica of the term node says was served last, until
// ctx ends; a new term served is followed as soon as it is known. From the
// start, and every pruneEvery, it removes the databases set aside longer
// ago than the retention, leader or not.
func (d *Data) Follow(ctx context.Context, node *Node) {
	var pruned time.Time
	for {
		if time.Since(pruned) >= pruneEvery {
			d.pruneSetAside()
			pruned = time.Now()
		}
		status := node.Status()
		if served := status.Served; served != 0 && served != d.followedTerm() {
			if err := d.follow(ctx, served); err != nil && ctx.Err() == nil {
				d.log.Error("Cluster: cannot follow the replica", "term", served, "error", err.Error())
			}
		}
		if l := status.Leader; l != nil && l.Node != node.Name() {
			d.recordLeader(fmt.Sprintf("%s at %s (term %d)", l.Node, l.URL, l.Term))
		}
		if sleep(ctx, minBackoff) != nil {
			return
		}
	}
}

func (d *Data) followedTerm() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.followed
}

func (d *Data) follow(ctx context.Context, term int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.promoting {
		return nil
	}
	if d.follower != nil {
		if err := d.follower.Close(); err != nil {
			return err
		}
		d.follower, d.followed = nil, 0
	}
	f, err := replica.StartFollowing(ctx, d.root, d.cluster, term, d.dbPath, d.log)
	if err != nil {
		return err
	}
	d.follower, d.followed, d.leader = f, term, ""
	return nil
}

// pruneSetAside removes the databases set aside longer ago than the
// retention, each logged.
func (d *Data) pruneSetAside() {
	if d.setAside == 0 {
		return
	}
	removed, err := replica.PruneSetAside(filepath.Dir(d.dbPath), d.setAside, time.Now())
	for _, c := range removed {
		d.log.Info("Cluster: removed a database set aside longer ago than --cluster-set-aside-retention", "path", c.Path, "set_aside_at", c.At, "bytes", c.Bytes)
	}
	if err != nil {
		d.log.Error("Cluster: could not remove a database set aside", "error", err.Error())
	}
}

// recordLeader names leader in the copy's mark when it changes: the
// commands refuse the copy (it changes only by what the leader ships) and
// name the leader instead.
func (d *Data) recordLeader(leader string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.follower == nil || d.promoting || leader == d.leader {
		return
	}
	if err := d.follower.SetLeader(leader); err != nil {
		d.log.Error("Cluster: cannot name the leader beside the copy", "error", err.Error())
		return
	}
	d.leader = leader
}

// Eligible says why this node may not campaign now, or nil: a node may
// lead a cluster that never served, or once its copy follows the replica
// within MaxLagOnFailover, as last read within MaxLagOnFailover.
func (d *Data) Eligible(served int64) error {
	if served == 0 {
		return nil
	}
	d.mu.Lock()
	f, followed := d.follower, d.followed
	d.mu.Unlock()
	// A copy of an earlier term lacks everything the served term wrote.
	if f == nil || followed != served {
		return fmt.Errorf("not following term %d's replica yet", served)
	}
	lag := f.Lag()
	switch {
	case lag.Err != nil:
		return fmt.Errorf("cannot read the replica: %w", lag.Err)
	case lag.CheckedAt.IsZero():
		return errors.New("the copy's lag is not known yet")
	case time.Since(lag.CheckedAt) > MaxLagOnFailover:
		// The replica does not answer: the copy may be any way behind.
		return fmt.Errorf("the replica has not answered for %s", time.Since(lag.CheckedAt).Round(time.Second))
	case lag.Seconds > MaxLagOnFailover.Seconds():
		return fmt.Errorf("the copy is %.1f s behind the replica, more than %s", lag.Seconds, MaxLagOnFailover)
	}
	return nil
}

// Lag is the copy's lag, for the registration and the metrics.
func (d *Data) Lag() Lag {
	d.mu.Lock()
	f := d.follower
	d.mu.Unlock()
	if f == nil {
		return Lag{}
	}
	lag := f.Lag()
	return Lag{Seconds: lag.Seconds, Transactions: int64(lag.Transactions)}
}

// Replica says what this node's data does with the replica, for its
// registration: ships to it (the leader), follows it, or why not.
func (d *Data) Replica() string {
	d.mu.Lock()
	f, r := d.follower, d.replicator
	d.mu.Unlock()
	switch {
	case r != nil:
		if st := r.Status(); st.Err != nil {
			return "shipping fails: " + st.Err.Error()
		}
		return "shipping"
	case f == nil:
		return "not following yet"
	}
	lag := f.Lag()
	switch {
	case lag.Err != nil:
		return "cannot read the replica: " + lag.Err.Error()
	case lag.Applied == 0:
		return "restoring"
	}
	return fmt.Sprintf("following term %d", lag.Term)
}

// stopFollowing keeps Follow from following another term: the node won.
func (d *Data) stopFollowing() {
	d.mu.Lock()
	d.promoting = true
	d.mu.Unlock()
}

// Promote makes the copy the database this node serves: it applies
// everything the followed term shipped and stops following. Without a copy
// (a cluster that never served), the data directory's database is used as
// it is, or created. Call it after stopFollowing.
func (d *Data) Promote(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.follower == nil {
		return nil
	}
	start := time.Now()
	if err := d.follower.Promote(ctx); err != nil {
		return fmt.Errorf("promote the copy of term %d: %w", d.followed, err)
	}
	d.log.Info("Cluster: promoted the copy", "term", d.followed, "took", time.Since(start).String())
	d.follower = nil
	return nil
}

// Replicate ships the database to term's path until Close.
func (d *Data) Replicate(ctx context.Context, term int64) error {
	r, err := replica.StartReplicating(ctx, d.dbPath, d.root, d.cluster, term, d.log)
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.replicator = r
	d.mu.Unlock()
	return nil
}

// Unshipped is how long the oldest commit not in the replica has waited,
// on the leader; zero elsewhere.
func (d *Data) Unshipped() time.Duration {
	d.mu.Lock()
	r := d.replicator
	d.mu.Unlock()
	if r == nil {
		return 0
	}
	return r.Unshipped()
}

// Sync ships every transaction committed before the call (a handover, a
// create under --cluster-sync); concurrent calls share shipments.
func (d *Data) Sync(ctx context.Context) error {
	d.mu.Lock()
	r := d.replicator
	d.mu.Unlock()
	if r == nil {
		return nil
	}
	return r.Sync(ctx)
}

// Shipping says what the leader has shipped; ok is false on a node that
// does not ship.
func (d *Data) Shipping() (status replica.Status, ok bool) {
	d.mu.Lock()
	r := d.replicator
	d.mu.Unlock()
	if r == nil {
		return replica.Status{}, false
	}
	return r.Status(), true
}

// Close stops following. The replicator is left running: its file
// descriptor holds the process's SQLite locks while PocketBase has the
// database open, so it ends with the process, once the handover's Sync has
// shipped everything.
func (d *Data) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.follower == nil {
		return nil
	}
	err := d.follower.Close()
	d.follower = nil
	return err
}
