package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"petstore/testkit/etcdtest"
)

// Kind is a kind of fault the nemesis makes.
type Kind string

// The faults, each healed before the next.
const (
	KillLeader        Kind = "SIGKILL of the leader"
	KillFollower      Kind = "SIGKILL of a follower"
	PauseLeader       Kind = "SIGSTOP of the leader past its TTL"
	KillEtcdMember    Kind = "an etcd member killed"
	QuorumLost        Kind = "etcd's quorum lost"
	DeleteLeaderKey   Kind = "the leader's election key deleted"
	RewriteKeys       Kind = "the leader's key and the term rewritten"
	LeaderCutEtcd     Kind = "the leader cut from etcd"
	FollowerCutEtcd   Kind = "a follower cut from etcd"
	LeaderCutPeers    Kind = "the leader cut from its peers"
	ReplicaUnwritable Kind = "the replica unwritable"
	// Unplanned is a change of leader no fault of the nemesis explains: a
	// lease not renewed in time on a loaded machine. It is found in the
	// history, not made.
	Unplanned Kind = "a failover no fault made"
)

// Kinds are every fault, in the order the report lists them.
var Kinds = []Kind{KillLeader, KillFollower, PauseLeader, KillEtcdMember, QuorumLost,
	DeleteLeaderKey, RewriteKeys, LeaderCutEtcd, FollowerCutEtcd, LeaderCutPeers, ReplicaUnwritable, Unplanned}

// hardLoss says whether a fault takes the leader away without a handover,
// so that what it acknowledged and had not shipped may be lost (the
// documented window); none may be with --cluster-sync.
func (k Kind) hardLoss() bool {
	switch k {
	case KillLeader, PauseLeader, LeaderCutEtcd, QuorumLost, Unplanned:
		return true
	}
	return false
}

// fault is one fault the nemesis made: when, on what, and when it was
// healed.
type fault struct {
	kind          Kind
	target        string // the node or etcd member it hit
	began, healed time.Time
	firstAck      time.Duration // from began to the next 201 (to a request sent after began); -1: none came
	gap           time.Duration // the longest time without a 201 from began to the first 201 after healed
}

// nemesis makes faults on a seeded schedule: every kind once in a shuffled
// order, then again in another, each held for a while, healed, and
// followed by a wait for the cluster to serve again.
type nemesis struct {
	c      *cluster
	h      *history
	cfg    Config
	rng    *rand.Rand
	logf   func(string, ...any)
	faults []*fault
	order  []Kind
}

func newNemesis(c *cluster, h *history, cfg Config) *nemesis {
	return &nemesis{c: c, h: h, cfg: cfg, rng: rand.New(rand.NewPCG(uint64(cfg.Seed), 0x6e656d)), logf: cfg.Logf}
}

func (nm *nemesis) next() Kind {
	if len(nm.order) == 0 {
		// Every kind but Unplanned, which is found, not made.
		nm.order = slices.DeleteFunc(slices.Clone(Kinds), func(k Kind) bool { return k == Unplanned })
		nm.rng.Shuffle(len(nm.order), func(i, j int) { nm.order[i], nm.order[j] = nm.order[j], nm.order[i] })
	}
	k := nm.order[0]
	nm.order = nm.order[1:]
	return k
}

// run makes faults until the deadline.
func (nm *nemesis) run(deadline time.Time) error {
	for time.Now().Before(deadline) {
		nm.settle()
		if !time.Now().Before(deadline) {
			break
		}
		k := nm.next()
		f, err := nm.inject(k)
		if err == nil && k == ReplicaUnwritable {
			nm.shipped()
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		if f == nil {
			continue // no leader to hit now
		}
		nm.faults = append(nm.faults, f)
		nm.logf("%s: %s (%s), healed after %s", f.began.Format("15:04:05.000"), f.kind, f.target, f.healed.Sub(f.began).Round(time.Millisecond))
	}
	return nil
}

// settle waits, at most 30 s, until every node runs, one leads, and a
// create was acknowledged since, then a moment more.
func (nm *nemesis) settle() {
	from := time.Now()
	waitFor(30*time.Second, func() bool {
		for _, n := range nm.c.nodes {
			if !n.Running() {
				return false
			}
		}
		_, acked := nm.h.firstAckAfter(from)
		return acked && nm.h.leader(nm.c) != nil
	})
	time.Sleep(time.Duration(500+nm.rng.IntN(1500)) * time.Millisecond)
}

// shipped waits, at most 20 s, until the leader says its replica is
// reachable, then two shipments more (the leader ships every second): the
// nemesis does not compound a replica fault with a loss of the leader,
// whose exposure (everything since shipping stopped) operations.md
// documents apart.
func (nm *nemesis) shipped() {
	waitFor(20*time.Second, func() bool {
		n := nm.h.leader(nm.c)
		if n == nil {
			return false
		}
		status, body := n.Get("/readyz")
		return status == http.StatusOK && strings.Contains(body, `"replica":"ok"`)
	})
	time.Sleep(2 * time.Second)
}

// hold is how long a fault lasts before it is healed: 1 to 4 s, or past
// the TTL for those that must outlast the lease.
func (nm *nemesis) hold(pastTTL bool) time.Duration {
	d := time.Duration(1000+nm.rng.IntN(3000)) * time.Millisecond
	if pastTTL {
		d += nm.cfg.TTL
	}
	return d
}

// inject makes a fault of kind k and heals it; nil when it needs a leader
// and none is known.
func (nm *nemesis) inject(k Kind) (*fault, error) {
	leader := nm.h.leader(nm.c)
	var follower *node
	for _, n := range nm.c.nodes {
		if n != leader && n.Running() && (follower == nil || nm.rng.IntN(2) == 0) {
			follower = n
		}
	}
	switch k {
	case KillLeader, PauseLeader, DeleteLeaderKey, RewriteKeys, LeaderCutEtcd, LeaderCutPeers:
		if leader == nil {
			return nil, nil
		}
	case KillFollower, FollowerCutEtcd:
		if follower == nil {
			return nil, nil
		}
	}
	f := &fault{kind: k, began: time.Now()}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	switch k {
	case KillLeader, KillFollower:
		n := leader
		if k == KillFollower {
			n = follower
		}
		f.target = n.Name
		n.Kill()
		time.Sleep(nm.hold(false))
		if err := n.Start(); err != nil {
			return nil, fmt.Errorf("%s did not start again: %w", n.Name, err)
		}
	case PauseLeader:
		f.target = leader.Name
		if err := leader.Signal(syscall.SIGSTOP); err != nil {
			return nil, err
		}
		time.Sleep(nm.hold(true))
		if err := leader.Signal(syscall.SIGCONT); err != nil {
			return nil, err
		}
	case KillEtcdMember, QuorumLost:
		members := nm.c.etcd.Members
		i := nm.rng.IntN(len(members))
		hit := members[i : i+1]
		if k == QuorumLost {
			hit = []*etcdtest.Member{members[i], members[(i+1)%len(members)]}
		}
		var names []string
		for _, m := range hit {
			names = append(names, m.Name)
			m.Stop()
		}
		f.target = strings.Join(names, " ")
		time.Sleep(nm.hold(k == QuorumLost))
		for _, m := range hit {
			if err := m.Start(); err != nil {
				return nil, err
			}
		}
	case DeleteLeaderKey, RewriteKeys:
		f.target = leader.Name
		key, err := nm.c.leaderKey(ctx)
		if err != nil {
			return nil, err
		}
		if key == "" {
			return nil, errors.New("no leader key in etcd while a node leads")
		}
		f.began = time.Now()
		if k == DeleteLeaderKey {
			_, err = nm.c.kv.Delete(ctx, key)
		} else {
			// A forged record, as an attacker or a slip writes it: the
			// peers' secret does not sign it, and the term goes back.
			_, err = nm.c.kv.Txn(ctx).Then(
				clientv3.OpPut(key, `{"node":"forged","url":"http://127.0.0.1:9","term":1}`, clientv3.WithIgnoreLease()),
				clientv3.OpPut("/"+clusterName+"/term", strconv.Itoa(1))).Commit()
		}
		if err != nil {
			return nil, err
		}
	case LeaderCutEtcd, FollowerCutEtcd:
		n := leader
		if k == FollowerCutEtcd {
			n = follower
		}
		f.target = n.Name
		for _, p := range n.etcd {
			p.Cut()
		}
		time.Sleep(nm.hold(true))
		for _, p := range n.etcd {
			p.Heal()
		}
	case LeaderCutPeers:
		f.target = leader.Name
		leader.peer.Cut()
		time.Sleep(nm.hold(false))
		leader.peer.Heal()
	case ReplicaUnwritable:
		f.target = "replica"
		if err := nm.c.setReplicaWritable(false); err != nil {
			return nil, err
		}
		time.Sleep(nm.hold(false))
		if err := nm.c.setReplicaWritable(true); err != nil {
			return nil, err
		}
	}
	f.healed = time.Now()
	return f, nil
}

// healAll ends every fault that may remain: partitions, a paused node, the
// replica; and starts what is stopped.
func (nm *nemesis) healAll() error {
	for _, n := range nm.c.nodes {
		n.peer.Heal()
		for _, p := range n.etcd {
			p.Heal()
		}
	}
	if err := nm.c.setReplicaWritable(true); err != nil {
		return err
	}
	for _, m := range nm.c.etcd.Members {
		if !m.Running() {
			if err := m.Start(); err != nil {
				return err
			}
		}
	}
	for _, n := range nm.c.nodes {
		if n.Running() {
			_ = n.Signal(syscall.SIGCONT)
		} else if err := n.Start(); err != nil {
			return err
		}
	}
	return nil
}
