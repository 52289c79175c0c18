// Package cluster runs a petstore node in cluster mode: the one package that
// talks to etcd. Nodes elect one leader with etcd's own election
// (go.etcd.io/etcd/client/v3/concurrency, on each node's session lease);
// the leader alone writes, and only while its lease is provably held (the
// fence); the others follow it and forward requests to it (the gate). The
// rest of the service sees a role, a "may I write now" check and the gate,
// never etcd. What a node does next is decided in one place, the HA loop
// (ha.go: the states, the rule, the acts): start reading there.
//
// The keys, under /<cluster-name>/:
//
//	leader/<lease>   the election (concurrency.Election): the first key is the leader's,
//	                 {"node","url","term"}; term is the key's create revision
//	nodes/<node>     each node's registration on its session's lease: {"node","url","role","term","lag","replica"}
//	term             the last term whose leader served: the followers follow its replica
//	replica          the cluster's replica (--replica-url), recorded by its leaders: a node with another refuses to start
package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

// Role is what a node shows the others of its State (State.role): its
// registration, the gate and the metrics read it.
type Role string

// The roles.
const (
	// Candidate: no leader is known to this node (etcd is unreachable, or
	// the election is under way), or this node has won and is promoting
	// its data, not serving yet.
	Candidate Role = "candidate"
	// Follower: another node leads; this one follows it, forwards requests
	// to it and waits in the election.
	Follower Role = "follower"
	// Leader: this node holds the election and serves.
	Leader Role = "leader"
)

// ErrNameTaken is Run's error when a live node holds this node's name.
var ErrNameTaken = errors.New("node name taken")

// LeaderInfo is the leader as the election's key names it.
type LeaderInfo struct {
	Node string `json:"node"`
	URL  string `json:"url"`
	Term int64  `json:"term"` // the election key's create revision
}

// Lag is how far a follower's copy of the data is behind the leader's.
type Lag struct {
	Seconds      float64 `json:"seconds"`
	Transactions int64   `json:"transactions"`
}

// Registration is a node's value under nodes/<node>, for the other nodes
// and the staff page.
type Registration struct {
	Node string `json:"node"`
	URL  string `json:"url"`
	Role Role   `json:"role"`
	Term int64  `json:"term"` // the term this node leads; 0 when it does not lead
	Lag  Lag    `json:"lag"`
	// Replica says what the node's data does with the replica: "shipping"
	// (the leader), "following term N", "restoring", or why not.
	Replica string `json:"replica"`
	// Unshipped is, on the leader, how many whole seconds its oldest
	// commit not in the replica has waited: what a failover would lose.
	Unshipped int64 `json:"unshipped,omitempty"`
}

// Status is a node's view of the cluster at one moment.
type Status struct {
	State     State       // the HA loop's state
	Role      Role        // the role the state shows to the others
	Term      int64       // this node's term, from its win until it steps down; 0 otherwise
	Leader    *LeaderInfo // nil: none known
	Served    int64       // the last term whose leader served (the term key); 0: none ever did
	Elections int64       // leader changes this node has seen
	Lag       Lag         // this node's data behind the leader's, as last published
	EtcdError string      // why etcd is unreachable; empty while it answers
	// LeaderRefused says why the leader's record in etcd was refused (not
	// authenticated: Leader is nil); empty while none is.
	LeaderRefused string
	// ForgedRecords counts the leader's records refused, each once.
	ForgedRecords int64
	// RefusedForwards counts the forwarded requests this node refused,
	// as the leader, as not authenticated (VerifyForward).
	RefusedForwards int64
	// LeaderUnshipped is how long the leader's oldest commit not in the
	// replica had waited when it last said (its registration's Unshipped):
	// kept once the leader is gone, as what promoting a copy would lose.
	LeaderUnshipped time.Duration
}

// Options connect a node to the parts that hold the data.
type Options struct {
	// Eligible says why this node may not campaign now (its data lags too
	// far), or nil when it may. Nil: always eligible.
	Eligible func() error
	// Lag reports the node's lag for its registration. Nil: none.
	Lag func() Lag
	// Replica says what the node's data does with the replica, for its
	// registration. Nil: nothing.
	Replica func() string
	// Unshipped is how long the oldest commit not in the replica has
	// waited, on the leader, for its registration. Nil: none.
	Unshipped func() time.Duration
	// OnElected runs, beside the HA loop, when this node wins term; it
	// promotes the data and starts serving, then calls Serving. The first
	// read of the term key is done before the node campaigns.
	OnElected func(term int64)
	// OnSteppedDown runs when this node has lost term's lease: the fence is
	// already closed.
	OnSteppedDown func(term int64)
}

// Node is this process in the cluster.
type Node struct {
	cfg   Config
	log   *slog.Logger
	opts  Options
	fence fence

	mu sync.Mutex
	// client is made by connect, once: Run's goroutines read it without
	// the lock, as they start after it was made.
	client *clientv3.Client
	closed bool // Close was called
	// refusedRecord is the create and mod revision of the last election
	// key refused.
	refusedRecord [2]int64
	// forwardRefusalLogged is when a refused forwarded request was last
	// logged: at most one a minute is.
	forwardRefusalLogged time.Time
	status               Status
	election             elector // while this node holds the election
	resigned             bool    // Resign was called: never campaign again
	lease                int64   // the current session's lease, once granted
	// etcdAnswers is whether etcd answered the last attempt; nil before
	// the first.
	etcdAnswers *bool
	// wake tells the HA loop that a fact it reads changed (the leader
	// observed).
	wake chan struct{}
	// loop is the HA loop of the session in which this node won; nil
	// before it wins.
	loop *haLoop
}

// backoff bounds the waits between attempts to reach etcd.
const (
	minBackoff = 250 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// New makes a node of the cluster cfg describes (parsed); it talks to etcd
// only once Check or Run starts.
func New(cfg Config, log *slog.Logger, opts Options) *Node {
	n := &Node{cfg: cfg, log: log.With("node", cfg.NodeName), opts: opts, wake: make(chan struct{}, 1)}
	n.fence.now = monotonic()
	n.status.State, n.status.Role = NoEtcd, Candidate
	n.status.EtcdError = "not reached yet"
	return n
}

// errClosed is connect's error once the node is closed.
var errClosed = errors.New("the node is closed")

// connect is the node's etcd client, made at the first call that succeeds.
// With a user, making it signs the user in, which etcd must answer: a node
// started while etcd does not answer makes it later.
func (n *Node) connect() (*clientv3.Client, error) {
	if c, err := n.etcd(); c != nil || err != nil {
		return c, err
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   n.cfg.Endpoints,
		DialTimeout: n.cfg.TTL,
		// Requests fail over to another member when one stops answering.
		DialKeepAliveTime:    n.cfg.TTL / 2,
		DialKeepAliveTimeout: n.cfg.TTL / 2,
		TLS:                  n.cfg.TLS,
		Username:             n.cfg.User,
		Password:             n.cfg.Password,
		Logger:               zap.NewNop(), // this package logs what matters, through log
	})
	if err != nil {
		return nil, fmt.Errorf("cannot connect to etcd: %w", err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.closed:
		c.Close()
		return nil, errClosed
	case n.client != nil: // made meanwhile by another call
		c.Close()
		return n.client, nil
	}
	n.client = c
	return c, nil
}

// etcd is the node's etcd client; nil before connect made it. Its error
// says the node is closed.
func (n *Node) etcd() (*clientv3.Client, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, errClosed
	}
	return n.client, nil
}

// Name is the node's name (--node-name).
func (n *Node) Name() string { return n.cfg.NodeName }

// Leave revokes the session's lease: the node's registration and its place
// in the election go at once, rather than a TTL later.
func (n *Node) Leave(ctx context.Context) error {
	n.fence.close()
	n.mu.Lock()
	lease, client := n.lease, n.client
	n.mu.Unlock()
	if lease == 0 || client == nil {
		return nil
	}
	_, err := client.Revoke(ctx, clientv3.LeaseID(lease))
	return err
}

// Close ends the node's connection to etcd; its lease, if not revoked by
// Resign or Leave, ends within the TTL.
func (n *Node) Close() error {
	n.fence.close()
	n.mu.Lock()
	client := n.client
	n.closed = true
	n.mu.Unlock()
	if client == nil {
		return nil
	}
	return client.Close()
}

// Status is the node's view of the cluster now.
func (n *Node) Status() Status {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := n.status
	if s.Leader != nil {
		leader := *s.Leader
		s.Leader = &leader
	}
	return s
}

// MayWrite says whether this node may commit a write now, and so answer
// from its copy: it leads, and its lease is provably held.
func (n *Node) MayWrite() bool { return n.fence.open() }

// Serving records that the elected node serves: it is the leader, its term
// the one the followers follow, and its fence opens. The term key changes
// only while this node's election key is the one of its term.
func (n *Node) Serving(ctx context.Context) error {
	n.mu.Lock()
	election, term, lease := n.election, n.status.Term, n.lease
	n.mu.Unlock()
	if election == nil {
		return errors.New("cluster: serving without leading")
	}
	// The cluster's replica is this node's: the first leader records it,
	// and no leader serves with another (Check refuses such a node at its
	// start, while etcd answers).
	sameReplica := clientv3.Compare(clientv3.CreateRevision(n.replicaKey()), "=", 0)
	recorded, err := n.client.Get(ctx, n.replicaKey())
	if err != nil {
		return fmt.Errorf("cluster: read the cluster's replica: %w", err)
	}
	if len(recorded.Kvs) > 0 {
		kv := recorded.Kvs[0]
		if err := n.sameReplica(string(kv.Value)); err != nil {
			return err
		}
		sameReplica = clientv3.Compare(clientv3.ModRevision(n.replicaKey()), "=", kv.ModRevision)
	}
	// The registration says leader before the fence opens: a node elected
	// while this one lives deposes it (deposeOthers).
	resp, err := n.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(election.Key()), "=", term), sameReplica).
		Then(clientv3.OpPut(n.prefix("term"), strconv.FormatInt(term, 10)),
			clientv3.OpPut(n.replicaKey(), n.cfg.Replica.String()),
			clientv3.OpPut(n.prefix("nodes/"+n.cfg.NodeName), n.registrationAs(Leader, term), clientv3.WithLease(clientv3.LeaseID(lease)))).
		Commit()
	if err != nil {
		return fmt.Errorf("cluster: record the term served: %w", err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("cluster: term %d is over, or the cluster's replica changed meanwhile", term)
	}
	if !n.fence.lead(lease) {
		return fmt.Errorf("cluster: term %d's lease is no longer provably held", term)
	}
	n.setServed(term)
	n.mu.Lock()
	loop := n.loop
	n.mu.Unlock()
	// The loop records that the node serves: it alone writes the state.
	served := make(chan struct{})
	select {
	case loop.servingSignal <- served:
	case <-loop.done:
		return fmt.Errorf("cluster: term %d ended before the node served", term)
	case <-ctx.Done():
		return fmt.Errorf("cluster: term %d: the HA loop did not record that the node serves: %w", term, ctx.Err())
	}
	select {
	case <-served:
	case <-loop.done:
		select {
		case <-served: // recorded, then the loop ended: the state says
		default:
			return fmt.Errorf("cluster: term %d ended before the node served", term)
		}
	case <-ctx.Done():
		return fmt.Errorf("cluster: term %d: the HA loop did not record that the node serves: %w", term, ctx.Err())
	}
	if s := n.State(); s != Leading {
		return fmt.Errorf("cluster: term %d: the node is %s, not leading", term, s)
	}
	return nil
}

// readServed reads the term key, and returns the revision to watch it from.
func (n *Node) readServed(ctx context.Context) (int64, error) {
	resp, err := n.client.Get(ctx, n.prefix("term"))
	if err != nil {
		return 0, fmt.Errorf("cannot read the term served: %w", err)
	}
	if len(resp.Kvs) == 1 {
		n.setServedValue(resp.Kvs[0].Value)
	}
	return resp.Header.Revision + 1, nil
}

// watchServed follows the term key from revision rev until ctx ends.
func (n *Node) watchServed(ctx context.Context, rev int64) {
	for ctx.Err() == nil {
		for wr := range n.client.Watch(ctx, n.prefix("term"), clientv3.WithRev(rev)) {
			for _, ev := range wr.Events {
				if ev.Type == clientv3.EventTypePut {
					n.setServedValue(ev.Kv.Value)
				}
				rev = ev.Kv.ModRevision + 1
			}
		}
		if sleep(ctx, minBackoff) == nil {
			if next, err := n.readServed(ctx); err == nil {
				rev = next
			}
		}
	}
}

func (n *Node) setServedValue(v []byte) {
	term, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		n.log.Error("Cluster: the term key holds no term", "value", string(v))
		return
	}
	n.setServed(term)
}

func (n *Node) setServed(term int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.status.Served = max(n.status.Served, term)
}

// Run takes part in the cluster until ctx ends: it opens a session (a
// lease etcd keeps while this process renews it), registers the node,
// observes the leader, and campaigns while eligible. While etcd is
// unreachable, it tries again with backoff. Its error is ErrNameTaken (a
// live node has this node's name) or nil.
func (n *Node) Run(ctx context.Context) error {
	wait := minBackoff
	for ctx.Err() == nil {
		started := time.Now()
		err := n.runSession(ctx)
		if errors.Is(err, ErrNameTaken) {
			return err
		}
		if ctx.Err() != nil || n.isResigned() {
			return nil
		}
		n.setEtcdError(err)
		if time.Since(started) > n.cfg.TTL {
			wait = minBackoff // the session lived: a new outage starts
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, maxBackoff)
	}
	return nil
}

// runSession is one session's life: it ends with the session (its lease
// lost or ctx done) and says why.
//
// Every goroutine it starts has ended when it returns.
func (n *Node) runSession(ctx context.Context) error {
	var tasks sync.WaitGroup
	defer tasks.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if _, err := n.connect(); err != nil {
		return err
	}
	ttl := int64(n.cfg.TTL / time.Second)
	grantCtx, grantCancel := context.WithTimeout(ctx, n.cfg.TTL)
	sentAt := n.fence.now()
	grant, err := n.client.Grant(grantCtx, ttl)
	grantCancel()
	if err != nil {
		return fmt.Errorf("cannot get a lease from etcd: %w", err)
	}
	lease := int64(grant.ID)
	n.fence.newLease(lease, sentAt, time.Duration(grant.TTL)*time.Second)
	// The previous session's lease may outlive it in etcd (a leader elected
	// in etcd extends every lease): revoked, its keys (the registration,
	// the place in the election) go now rather than hold this node up.
	if previous := n.swapLease(lease); previous != 0 {
		rctx, cancel := context.WithTimeout(ctx, n.cfg.TTL)
		_, _ = n.client.Revoke(rctx, clientv3.LeaseID(previous))
		cancel()
	}
	session, err := concurrency.NewSession(n.client, concurrency.WithLease(grant.ID), concurrency.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("cannot keep a lease in etcd: %w", err)
	}
	defer session.Orphan() // the lease ends by itself; Resign revokes it
	n.setEtcdError(nil)

	if err := n.register(ctx, session); err != nil {
		return err
	}
	tasks.Go(func() { n.publish(ctx, n.prefix("nodes/"+n.cfg.NodeName), session.Lease()) })
	sessionLost := make(chan error, 1)
	tasks.Go(func() { sessionLost <- n.renew(ctx, grant.ID) })

	// The term served is known before the node may campaign: a node that
	// never saw it would take the cluster for a new one.
	rev, err := n.readServed(ctx)
	if err != nil {
		return err
	}
	tasks.Go(func() { n.watchServed(ctx, rev) })
	tasks.Go(func() { n.watchLeaderShipping(ctx) })
	election := concurrency.NewElection(session, n.prefix("leader"))
	tasks.Go(func() { n.observe(ctx, election) })
	loop := &haLoop{n: n, ctx: ctx, tasks: &tasks, election: election, lease: lease, sessionDone: session.Done(),
		guard: n.guardKeys, depose: n.deposeOthers, sessionLost: sessionLost, keysLost: make(chan error, 1), servingSignal: make(chan chan struct{}), giveUp: make(chan error), done: make(chan struct{})}
	return loop.run()
}

// leaveRole closes the fence at once, then gives up the term.
func (n *Node) leaveRole() {
	n.fence.close()
	n.mu.Lock()
	n.election = nil
	n.status.Term = 0
	n.mu.Unlock()
}

// stepDown gives up term, whose lease is lost, or whose keys are no longer
// its own. With the fence closed, what the node committed is shipped first
// (OnSteppedDown), and only then is the session's lease revoked, if etcd
// still has it: while the node is registered as the leader, the next one
// waits its lease out (deposeOthers), so it never promotes a replica
// without the last writes. Revoked before the shipment, the lease let the
// next leader promote within milliseconds, and acknowledged creates were
// lost (the Jepsen-style run: 205 at an election key's deletion).
func (n *Node) stepDown(term int64, reason error) {
	n.leaveRole()
	n.log.Warn("Cluster: stepped down; writes stopped", "term", term, "reason", reason.Error())
	if n.opts.OnSteppedDown != nil {
		n.opts.OnSteppedDown(term)
	}
	n.revokeLease(n.cfg.TTL / 3)
}

// revokeLease revokes the session's lease, waiting for etcd at most
// timeout: its keys (the registration, the place in the election) go at
// once.
func (n *Node) revokeLease(timeout time.Duration) {
	n.mu.Lock()
	lease, client := n.lease, n.client
	n.mu.Unlock()
	if client == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, _ = client.Revoke(ctx, clientv3.LeaseID(lease)) // gone already, or etcd does not answer: it ends within the TTL
}

// Resign hands the leadership over: the fence closes at once (no write
// commits from now on), the session's lease is revoked, which deletes the
// election key and the registration together (the next leader finds no
// other node registered as the leader), and the node never campaigns
// again. The caller ships the data's last transaction before: then a
// follower wins with everything.
func (n *Node) Resign(ctx context.Context) error {
	n.fence.close()
	n.mu.Lock()
	n.resigned = true
	election, lease := n.election, n.lease
	n.mu.Unlock()
	if election == nil {
		return nil
	}
	if _, err := n.client.Revoke(ctx, clientv3.LeaseID(lease)); err != nil {
		return fmt.Errorf("cluster: resign: %w", err)
	}
	n.log.Info("Cluster: resigned the leadership", "term", election.Rev())
	return nil
}

// swapLease records lease as the session's and returns the one before.
func (n *Node) swapLease(lease int64) int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	previous := n.lease
	n.lease = lease
	return previous
}

func (n *Node) isResigned() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.resigned
}

// renew renews lease every third of the TTL with a request of its own,
// whose start moves the fence, until ctx ends or the lease is gone.
// (The session renews it too; its renewals do not say when they were sent.)
func (n *Node) renew(ctx context.Context, lease clientv3.LeaseID) error {
	interval := n.cfg.TTL / 3
	for {
		sentAt := n.fence.now()
		rctx, cancel := context.WithTimeout(ctx, interval)
		resp, err := n.client.KeepAliveOnce(rctx, lease)
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, rpcLeaseNotFound):
			return errors.New("etcd no longer has the session's lease")
		case err != nil:
			n.log.Debug("Cluster: lease renewal failed", "error", err.Error())
		default:
			n.fence.renewed(int64(lease), sentAt, time.Duration(resp.TTL)*time.Second)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(sentAt + interval - n.fence.now()):
		}
	}
}

// eligibleEvery is how often the HA loop asks whether the node is
// eligible, when nothing else wakes it.
const eligibleEvery = 500 * time.Millisecond

// observe follows the election's leader key until ctx ends. A record the
// secret does not authenticate is refused (refuseLeader): this node then
// knows no leader, and forwards nothing.
func (n *Node) observe(ctx context.Context, election *concurrency.Election) {
	for ctx.Err() == nil {
		for resp := range election.Observe(ctx) {
			if len(resp.Kvs) == 0 {
				continue
			}
			kv := resp.Kvs[0]
			leader, err := n.readLeader(kv)
			if err != nil {
				n.refuseLeader(kv, err)
				continue
			}
			n.setLeader(&leader)
		}
		select {
		case <-ctx.Done():
		case <-time.After(minBackoff):
		}
	}
}

// refuseLeader records that the election key kv holds a record that is not
// authenticated: no leader is known, and the gate answers 503. Each record
// is logged and counted once, however often it is observed.
func (n *Node) refuseLeader(kv *mvccpb.KeyValue, why error) {
	n.mu.Lock()
	n.status.Leader = nil
	n.status.LeaderRefused = why.Error()
	seen := n.refusedRecord == [2]int64{kv.CreateRevision, kv.ModRevision}
	if !seen {
		n.refusedRecord = [2]int64{kv.CreateRevision, kv.ModRevision}
		n.status.ForgedRecords++
	}
	n.mu.Unlock()
	if !seen {
		n.log.Error("Cluster: refusing the leader named in etcd; forwarding nothing", "key", string(kv.Key), "reason", why.Error())
	}
}

func (n *Node) prefix(suffix string) string { return "/" + n.cfg.Name + "/" + suffix }

// setLeader records the leader observed; a new term counts as an election.
func (n *Node) setLeader(leader *LeaderInfo) {
	n.mu.Lock()
	previous := n.status.Leader
	n.status.Leader = leader
	n.status.LeaderRefused = ""
	changed := previous == nil || previous.Term != leader.Term
	if changed {
		n.status.Elections++
	}
	n.mu.Unlock()
	if changed {
		n.log.Info("Cluster: leader", "leader", leader.Node, "url", leader.URL, "term", leader.Term)
	}
	n.poke()
}

// poke wakes the HA loop.
func (n *Node) poke() {
	select {
	case n.wake <- struct{}{}:
	default: // already woken
	}
}

// setEtcdError records whether etcd answers, logging each change.
func (n *Node) setEtcdError(err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	n.mu.Lock()
	changed := n.etcdAnswers == nil || *n.etcdAnswers != (err == nil)
	answers := err == nil
	n.etcdAnswers = &answers
	n.status.EtcdError = msg
	n.mu.Unlock()
	switch {
	case !changed:
	case err == nil:
		n.log.Info("Cluster: etcd answers", "endpoints", n.cfg.Endpoints)
	default:
		n.log.Warn("Cluster: etcd does not answer; trying again", "endpoints", n.cfg.Endpoints, "error", msg)
	}
}
