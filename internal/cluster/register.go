package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

var rpcLeaseNotFound = rpctypes.ErrLeaseNotFound

// publishInterval is how often a node's registration is brought up to date
// with its role and lag.
const publishInterval = time.Second

// register puts the node's registration on session's lease (publish then
// keeps it up to date). A key of the same name on another lease is a
// live node's, or a dead one's whose lease has not ended yet (this node,
// restarted within the TTL): register waits for the lease's remaining time,
// and refuses with ErrNameTaken if the same lease still holds the key then,
// renewed by a live node.
func (n *Node) register(ctx context.Context, session *concurrency.Session) error {
	key := n.prefix("nodes/" + n.cfg.NodeName)
	for {
		value := n.registration()
		resp, err := n.client.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, value, clientv3.WithLease(session.Lease()))).
			Else(clientv3.OpGet(key)).
			Commit()
		if err != nil {
			return fmt.Errorf("cannot register the node in etcd: %w", err)
		}
		if resp.Succeeded {
			break
		}
		held := resp.Responses[0].GetResponseRange().Kvs[0]
		remaining, err := n.leaseRemaining(ctx, held.Lease)
		if err != nil {
			return err
		}
		if remaining <= 0 {
			// Expired, and etcd is about to delete its keys.
			if err := sleep(ctx, minBackoff); err != nil {
				return err
			}
			continue
		}
		// Wait for the key's deletion (its lease's end), or a second past
		// the lease's remaining time.
		wctx, cancel := context.WithTimeout(ctx, remaining+time.Second)
		gone := false
		for wr := range n.client.Watch(wctx, key, clientv3.WithRev(resp.Header.Revision+1)) {
			if gone = deleted(wr); gone {
				break
			}
		}
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if gone {
			continue
		}
		// Still there past its end: renewed, by a live node.
		if remaining, err = n.leaseRemaining(ctx, held.Lease); err != nil {
			return err
		}
		if remaining > 0 {
			var other Registration
			_ = json.Unmarshal(held.Value, &other)
			return fmt.Errorf("%w: a live node at %s is registered as %q in cluster %q: give this node another --node-name",
				ErrNameTaken, other.URL, n.cfg.NodeName, n.cfg.Name)
		}
	}
	return nil
}

// leaseRemaining is how long lease has left; 0 or less once it has ended.
func (n *Node) leaseRemaining(ctx context.Context, lease int64) (time.Duration, error) {
	ttl, err := n.client.TimeToLive(ctx, clientv3.LeaseID(lease))
	if err != nil {
		return 0, fmt.Errorf("cannot register the node in etcd: %w", err)
	}
	return time.Duration(ttl.TTL) * time.Second, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func deleted(wr clientv3.WatchResponse) bool {
	for _, ev := range wr.Events {
		if ev.Type == clientv3.EventTypeDelete {
			return true
		}
	}
	return false
}

// publish puts the registration again whenever the role or the lag change,
// but while the node steps down.
func (n *Node) publish(ctx context.Context, key string, lease clientv3.LeaseID) {
	published := n.registration()
	ticker := time.NewTicker(publishInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		n.mu.Lock()
		steppingDown := n.status.State == Fenced
		n.mu.Unlock()
		value := n.registration()
		if value == published || steppingDown {
			// A leader stepping down stays registered as the leader until
			// its lease goes, after its last shipment (stepDown): the next
			// leader then deposes it and waits its lease out
			// (deposeOthers), rather than promote without those writes.
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, publishInterval)
		_, err := n.client.Put(pctx, key, value, clientv3.WithLease(lease))
		cancel()
		if err == nil {
			published = value
		}
	}
}

// registration is the node's registration now.
func (n *Node) registration() string {
	n.mu.Lock()
	role, term := n.status.Role, n.status.Term
	n.mu.Unlock()
	return n.registrationAs(role, term)
}

// registrationAs is the node's registration in role, leading term when the
// role is Leader.
func (n *Node) registrationAs(role Role, term int64) string {
	r := Registration{Node: n.cfg.NodeName, URL: n.cfg.AdvertiseURL, Role: role}
	if role == Leader {
		r.Term = term
	}
	if n.opts.Lag != nil {
		r.Lag = n.opts.Lag()
	}
	if n.opts.Replica != nil {
		r.Replica = n.opts.Replica()
	}
	if n.opts.Unshipped != nil && role == Leader {
		r.Unshipped = int64(n.opts.Unshipped() / time.Second) // whole seconds: a put when it changes, not at every shipment
	}
	n.mu.Lock()
	n.status.Lag = r.Lag
	n.mu.Unlock()
	b, _ := json.Marshal(r)
	return string(b)
}

// Nodes are the nodes registered in the cluster now, in name order.
func (n *Node) Nodes(ctx context.Context) ([]Registration, error) {
	client, err := n.etcd()
	if client == nil && err == nil {
		err = errors.New("etcd not reached yet")
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: read the nodes: %w", err)
	}
	resp, err := client.Get(ctx, n.prefix("nodes/"), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, fmt.Errorf("cluster: read the nodes: %w", err)
	}
	nodes := make([]Registration, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var r Registration
		if json.Unmarshal(kv.Value, &r) == nil {
			nodes = append(nodes, r)
		}
	}
	return nodes, nil
}

// View is the cluster as staff see it (the staff page's nodes): every
// registered node, in name order, and the leader this node knows.
type View struct {
	Name   string     `json:"name"`   // --cluster-name
	Node   string     `json:"node"`   // the node that answers
	Leader string     `json:"leader"` // the leader's name; empty while none is known
	Term   int64      `json:"term"`   // the leader's term; 0 while none is known
	Nodes  []NodeView `json:"nodes"`
}

// NodeView is a node's registration, and whether it holds the election.
type NodeView struct {
	Registration
	Leader bool `json:"leader"`
}

// View reads the nodes' registrations from etcd: read-only.
func (n *Node) View(ctx context.Context) (View, error) {
	regs, err := n.Nodes(ctx)
	if err != nil {
		return View{}, err
	}
	v := View{Name: n.cfg.Name, Node: n.cfg.NodeName, Nodes: make([]NodeView, 0, len(regs))}
	if l := n.Status().Leader; l != nil {
		v.Leader, v.Term = l.Node, l.Term
	}
	for _, r := range regs {
		v.Nodes = append(v.Nodes, NodeView{Registration: r, Leader: r.Node == v.Leader})
	}
	return v, nil
}

// watchLeaderShipping follows the registrations of the nodes that say they
// lead, until ctx ends, and keeps what the last one said of its commits not
// in the replica (Status.LeaderUnshipped): a follower knows that shipping
// stopped from the leader itself, and still knows it once that leader is
// gone, when it matters.
func (n *Node) watchLeaderShipping(ctx context.Context) {
	for ctx.Err() == nil {
		resp, err := n.client.Get(ctx, n.prefix("nodes/"), clientv3.WithPrefix())
		if err == nil {
			for _, kv := range resp.Kvs {
				n.readLeaderShipping(kv.Value)
			}
			for wr := range n.client.Watch(ctx, n.prefix("nodes/"), clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1)) {
				for _, ev := range wr.Events {
					if ev.Type == clientv3.EventTypePut {
						n.readLeaderShipping(ev.Kv.Value)
					}
				}
			}
		}
		if sleep(ctx, minBackoff) != nil {
			return
		}
	}
}

// readLeaderShipping keeps what a leader's registration says of its commits
// not in the replica.
func (n *Node) readLeaderShipping(value []byte) {
	var r Registration
	if json.Unmarshal(value, &r) != nil || r.Role != Leader || r.Node == n.cfg.NodeName {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.status.LeaderUnshipped = time.Duration(r.Unshipped) * time.Second
}
