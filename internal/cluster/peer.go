package cluster

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"petstore/internal/requestid"
)

// The nodes authenticate each other with the cluster's secret
// (--cluster-secret-file): the leader's record in etcd carries a MAC of its
// content, which a follower checks before it forwards a request there, and
// every forwarded request carries a MAC of what the forwarding node decided
// about it (its client's address, its request id), which the leader checks
// before it believes any of it. So an attacker who can write to etcd can
// stop the service, but cannot send the followers' requests (and their API
// keys and passwords) elsewhere, and a client cannot pass for a node.
//
// Each MAC is HMAC-SHA256 under the secret of a list of fields, each
// prefixed by its length, the first naming what is authenticated: a MAC of
// one kind never passes for another.

// The headers of a forwarded request, besides ForwardedByHeader.
const (
	// ForwardedForHeader is the client's address, as the forwarding node's
	// own rules decided it (--proxy-addresses, --trusted-proxy-headers).
	ForwardedForHeader = "Petstore-Forwarded-For"
	// ForwardedAtHeader is when the node forwarded the request, in Unix
	// seconds: the leader takes a MAC within maxForwardSkew of its clock.
	ForwardedAtHeader = "Petstore-Forwarded-At"
	// ForwardedAuthHeader is the MAC of the forwarded request.
	ForwardedAuthHeader = "Petstore-Forwarded-Auth"
)

// forwardedHeaders are the headers a forwarding node sets, and a client's
// own of which never pass a gate.
var forwardedHeaders = []string{ForwardedByHeader, ForwardedForHeader, ForwardedAtHeader, ForwardedAuthHeader}

// maxForwardSkew bounds the difference between the clocks of a forwarding
// node and the leader, and how long a forwarded request's MAC may be
// replayed.
const maxForwardSkew = 30 * time.Second

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

// forwardFields are the fields a forwarded request's MAC covers: what the
// forwarding node decided about it, and what routes it.
func (n *Node) forwardFields(r *http.Request, by, at string) []string {
	return []string{"forward", n.cfg.Name, by, at, r.Method, r.Host, r.URL.RequestURI(),
		r.Header.Get(ForwardedForHeader), r.Header.Get(requestid.Header),
		r.Header.Get("X-Forwarded-Host"), r.Header.Get("X-Forwarded-Proto")}
}

// signForward sets the forwarded request out's time and MAC, once its other
// headers are set.
func (n *Node) signForward(out *http.Request, now time.Time) {
	if n.cfg.Secret == nil {
		return
	}
	at := strconv.FormatInt(now.Unix(), 10)
	out.Header.Set(ForwardedAtHeader, at)
	out.Header.Set(ForwardedAuthHeader, n.mac(n.forwardFields(out, n.cfg.NodeName, at)...))
}

// Forwarded is what a node that forwarded a request decided about it.
type Forwarded struct {
	By        string // the forwarding node's name
	Client    string // the client's address
	RequestID string
}

// ErrUnauthenticatedForward is VerifyForward's error for a request that
// names a forwarding node but does not prove that a node of the cluster
// forwarded it.
var ErrUnauthenticatedForward = errors.New("a forwarded request is not authenticated")

// VerifyForward says what the node that forwarded r decided about it, once
// r's MAC verifies with the secret, within maxForwardSkew of now; ok is
// false when r names no forwarding node. It needs the secret: without one
// (--cluster-insecure-peers), nothing is verified, and ok is false.
func (n *Node) VerifyForward(r *http.Request, now time.Time) (f Forwarded, ok bool, err error) {
	if n.cfg.Secret == nil {
		return Forwarded{}, false, nil
	}
	named := false
	for _, h := range forwardedHeaders {
		named = named || r.Header.Get(h) != ""
	}
	if !named {
		return Forwarded{}, false, nil
	}
	by, at, mac := r.Header.Get(ForwardedByHeader), r.Header.Get(ForwardedAtHeader), r.Header.Get(ForwardedAuthHeader)
	fail := func(why string) (Forwarded, bool, error) {
		return Forwarded{}, true, fmt.Errorf("%w (from %s, naming node %q): %s", ErrUnauthenticatedForward, r.RemoteAddr, by, why)
	}
	if mac == "" {
		return fail("it has no MAC")
	}
	sent, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return fail("it has no time")
	}
	if skew := now.Sub(time.Unix(sent, 0)); skew > maxForwardSkew || skew < -maxForwardSkew {
		return fail(fmt.Sprintf("its time is %s off this node's clock, more than %s", skew.Round(time.Second), maxForwardSkew))
	}
	if !n.verify(mac, n.forwardFields(r, by, at)...) {
		return fail("its MAC does not verify with this node's --cluster-secret-file")
	}
	client, err := netip.ParseAddr(r.Header.Get(ForwardedForHeader))
	if err != nil {
		return fail("it names no client address")
	}
	return Forwarded{By: by, Client: client.String(), RequestID: r.Header.Get(requestid.Header)}, true, nil
}

// asClient makes r look as it did to the node that forwarded it: its peer
// is the client f names, on the port r came from.
func (f Forwarded) asClient(r *http.Request) {
	_, port, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		port = "0"
	}
	r.RemoteAddr = net.JoinHostPort(f.Client, port)
}

// refuseForward counts a forwarded request refused as not authenticated,
// and logs it, at most once a minute: a client may send many.
func (n *Node) refuseForward(why error) {
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
