package cluster

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// The nodes authenticate each other with the cluster's secret
// (--cluster-secret-file): the leader's record in etcd carries a MAC of its
// content, which a follower checks before it forwards a request there, and
// every forwarded request carries a MAC (MAC, made and checked by the
// gate, internal/clustergate) of what the forwarding node decided about it
// (its client's address, its request id), which the leader checks before
// it believes any of it. So an attacker who can write to etcd can
// stop the service, but cannot send the followers' requests (and their API
// keys and passwords) elsewhere, and a client cannot pass for a node.
//
// Each MAC is HMAC-SHA256 under the secret of a list of fields, each
// prefixed by its length, the first naming what is authenticated: a MAC of
// one kind never passes for another.

// MAC is the MAC, under the cluster's secret, of a message of kind
// between this cluster's nodes, made of fields. Authenticated says whether
// there is a secret.
func (n *Node) MAC(kind string, fields ...string) string {
	return n.mac(append([]string{kind, n.cfg.Name}, fields...)...)
}

// Authenticated says whether the nodes authenticate each other: the
// cluster has a secret (--cluster-secret-file).
func (n *Node) Authenticated() bool { return n.cfg.Secret != nil }

// mac is the MAC of fields under the secret.
func (n *Node) mac(fields ...string) string {
	h := hmac.New(sha256.New, n.cfg.Secret)
	for _, f := range fields {
		h.Write(binary.AppendUvarint(nil, uint64(len(f))))
		h.Write([]byte(f))
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// verify says whether mac is the MAC of fields under the secret.
func (n *Node) verify(mac string, fields ...string) bool {
	return hmac.Equal([]byte(mac), []byte(n.mac(fields...)))
}

// leaderRecord is the election key's value: the leader, and the MAC that
// proves a node of the cluster wrote it. Term is 0 in the value a node
// campaigns with, and its key's create revision once it leads (Proclaim).
type leaderRecord struct {
	LeaderInfo
	MAC string `json:"mac,omitempty"`
}

func (n *Node) leaderValue(term int64) string {
	r := leaderRecord{LeaderInfo: LeaderInfo{Node: n.cfg.NodeName, URL: n.cfg.AdvertiseURL, Term: term}}
	if n.cfg.Secret != nil {
		r.MAC = n.mac(r.macFields(n.cfg.Name)...)
	}
	b, _ := json.Marshal(r)
	return string(b)
}

func (r leaderRecord) macFields(cluster string) []string {
	return []string{"leader", cluster, r.Node, r.URL, strconv.FormatInt(r.Term, 10)}
}

// errForged is readLeader's error for a record the secret does not
// authenticate.
var errForged = errors.New("the leader's record in etcd is not authenticated")

// readLeader is the leader an election key (kv) names, once its MAC
// verifies with the secret, and its term, when it names one, is its key's:
// a record copied from another term is refused as forged, as is one that
// is not a record at all.
func (n *Node) readLeader(kv *mvccpb.KeyValue) (LeaderInfo, error) {
	var r leaderRecord
	if err := json.Unmarshal(kv.Value, &r); err != nil {
		return LeaderInfo{}, fmt.Errorf("%w: it holds no leader (%v)", errForged, err)
	}
	if n.cfg.Secret != nil {
		switch {
		case r.MAC == "":
			return LeaderInfo{}, fmt.Errorf("%w: it has no MAC, and this node's --cluster-secret-file asks for one", errForged)
		case !n.verify(r.MAC, r.macFields(n.cfg.Name)...):
			return LeaderInfo{}, fmt.Errorf("%w: its MAC does not verify with this node's --cluster-secret-file", errForged)
		case r.Term != 0 && r.Term != kv.CreateRevision:
			return LeaderInfo{}, fmt.Errorf("%w: it is term %d's, under a key of term %d", errForged, r.Term, kv.CreateRevision)
		}
	}
	r.Term = kv.CreateRevision
	return r.LeaderInfo, nil
}

// RefusedForward counts a forwarded request the leader refused as not
// authenticated, and logs it, at most once a minute: a client may send
// many.
func (n *Node) RefusedForward(why error) {
	n.mu.Lock()
	n.status.RefusedForwards++
	refused := n.status.RefusedForwards
	say := time.Since(n.forwardRefusalLogged) >= time.Minute
	if say {
		n.forwardRefusalLogged = time.Now()
	}
	n.mu.Unlock()
	if say {
		n.log.Warn("Cluster: refused a forwarded request that is not authenticated (one such line a minute at most)", "reason", why.Error(), "refused", refused)
	}
}
