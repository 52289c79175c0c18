package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// guardKeys watches, until ctx ends, the two keys that make this node the
// leader of term: its election key (key, on lease, holding its leader
// value) and the term key, once it holds term. When either is deleted or
// no longer its own (an operator's `etcdctl del` or `put`), it closes the
// fence and returns why: the node steps down, since another node may win
// the election or follow another term meanwhile. etcd's watch tells it at
// once; a read of both keys every renewal interval bounds the time when the
// watch does not (a watch cut, a compaction).
func (n *Node) guardKeys(ctx context.Context, key string, term, lease int64) error {
	interval := n.cfg.TTL / 3
	g := keyGuard{key: key, termKey: n.prefix("term"), term: term, lease: lease, value: n.leaderValue(term)}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	var keyWatch, termWatch clientv3.WatchChan
	stopWatches := func() {}
	defer func() { stopWatches() }()
	lost := func(why error) error {
		n.fence.close()
		return fmt.Errorf("this node's keys in etcd are no longer its own: %w", why)
	}
	// read reads both keys, and starts watching them after the read when
	// the watches are not running.
	read := func() error {
		rctx, cancel := context.WithTimeout(ctx, interval)
		resp, err := n.client.Txn(rctx).Then(clientv3.OpGet(g.key), clientv3.OpGet(g.termKey)).Commit()
		cancel()
		if err != nil {
			// etcd does not answer: neither do the renewals, and the
			// fence closes by itself.
			return nil
		}
		if why := g.check(g.key, firstKV(resp.Responses[0])); why != nil {
			return why
		}
		if why := g.check(g.termKey, firstKV(resp.Responses[1])); why != nil {
			return why
		}
		if keyWatch == nil {
			wctx, cancel := context.WithCancel(ctx)
			stopWatches = cancel
			from := clientv3.WithRev(resp.Header.Revision + 1)
			keyWatch, termWatch = n.client.Watch(wctx, g.key, from), n.client.Watch(wctx, g.termKey, from)
		}
		return nil
	}
	if why := read(); why != nil {
		return lost(why)
	}
	for {
		var wr clientv3.WatchResponse
		var ok bool
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
			if why := read(); why != nil {
				return lost(why)
			}
			continue
		case wr, ok = <-keyWatch:
		case wr, ok = <-termWatch:
		}
		if !ok || wr.Err() != nil {
			// Read again at the next tick, and watch from there.
			stopWatches()
			keyWatch, termWatch = nil, nil
			continue
		}
		for _, ev := range wr.Events {
			// A deletion's Kv has no CreateRevision.
			if why := g.check(string(ev.Kv.Key), ev.Kv); why != nil {
				return lost(why)
			}
		}
	}
}

// keyGuard says whether a leader's keys are still its own.
type keyGuard struct {
	key, termKey string
	term, lease  int64
	value        string // the election key's value, as Proclaim put it
	served       bool   // the term key has held term
}

// check says why kv, the value of k now (with no Value and no
// CreateRevision: deleted), is not this leader's. The term key is this
// leader's once it has held its term (Serving); until then it holds an
// earlier term's.
func (g *keyGuard) check(k string, kv *mvccpb.KeyValue) error {
	exists := kv != nil && kv.CreateRevision != 0
	if k == g.key {
		switch {
		case !exists:
			return errors.New("its election key was deleted")
		case kv.CreateRevision != g.term || kv.Lease != g.lease || string(kv.Value) != g.value:
			return fmt.Errorf("its election key was overwritten with %q", kv.Value)
		}
		return nil
	}
	if !exists {
		if g.served {
			return errors.New("the term key was deleted")
		}
		return nil
	}
	v, err := strconv.ParseInt(string(kv.Value), 10, 64)
	switch {
	case err == nil && v == g.term:
		g.served = true
	case g.served || err == nil && v > g.term:
		return fmt.Errorf("the term key was overwritten with %q", kv.Value)
	}
	return nil
}

// firstKV is a range's first key, or nil.
func firstKV(r *etcdserverpb.ResponseOp) *mvccpb.KeyValue {
	if kvs := r.GetResponseRange().GetKvs(); len(kvs) > 0 {
		return kvs[0]
	}
	return nil
}

// deposeOthers revokes the lease of every other node still registered as
// the leader: one whose election key was deleted or overwritten while it
// lives, which may not have noticed yet. Having revoked one, it waits out
// the TTL: no renewal succeeds once the lease is revoked, so that node's
// fence, which lasts at most a TTL from its last renewal's sending, is
// closed by then, and the two never serve at once.
func (n *Node) deposeOthers(ctx context.Context) error {
	resp, err := n.client.Get(ctx, n.prefix("nodes/"), clientv3.WithPrefix())
	if err != nil {
		return fmt.Errorf("cannot read the nodes' registrations: %w", err)
	}
	revoked := false
	for _, kv := range resp.Kvs {
		var r Registration
		if json.Unmarshal(kv.Value, &r) != nil || r.Role != Leader || r.Node == n.cfg.NodeName || kv.Lease == 0 {
			continue
		}
		if _, err := n.client.Revoke(ctx, clientv3.LeaseID(kv.Lease)); err != nil && !errors.Is(err, rpcLeaseNotFound) {
			return fmt.Errorf("cannot depose %s, still registered as the leader: %w", r.Node, err)
		}
		n.log.Warn("Cluster: deposed a node still registered as the leader; waiting out its lease", "leader", r.Node, "term", r.Term, "ttl", n.cfg.TTL.String())
		revoked = true
	}
	if revoked {
		return sleep(ctx, n.cfg.TTL)
	}
	return nil
}
