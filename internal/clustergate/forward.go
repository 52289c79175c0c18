package clustergate

import (
	"crypto/hmac"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"petstore/internal/requestid"
)

// The headers of a forwarded request.
const (
	// ForwardedByHeader names the node that forwarded a request to the
	// leader. A node that does not serve answers such a request itself
	// (503) rather than forward it again: two nodes with stale views never
	// pass a request back and forth.
	ForwardedByHeader = "Petstore-Forwarded-By"
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

// forwardKind names a forwarded request's MAC (cluster.Node.MAC).
const forwardKind = "forward"

// forwardFields are the fields a forwarded request's MAC covers: what the
// forwarding node decided about it, and what routes it. Its target is the
// one on its request line: as sent by the forwarding node, and as received
// by the leader, whatever the leader's server rewrites of its URL before
// the check (api.GuardServer routes /v1//pets to the 404 of /v1).
func forwardFields(r *http.Request, by, at string) []string {
	target := r.RequestURI // received
	if target == "" {      // being sent
		target = r.URL.RequestURI()
	}
	return []string{by, at, r.Method, r.Host, target,
		r.Header.Get(ForwardedForHeader), r.Header.Get(requestid.Header),
		r.Header.Get("X-Forwarded-Host"), r.Header.Get("X-Forwarded-Proto")}
}

// signForward sets the forwarded request out's time and MAC, once its other
// headers are set; without the cluster's secret, neither.
func signForward(node Node, out *http.Request, now time.Time) {
	if !node.Authenticated() {
		return
	}
	at := strconv.FormatInt(now.Unix(), 10)
	out.Header.Set(ForwardedAtHeader, at)
	out.Header.Set(ForwardedAuthHeader, node.MAC(forwardKind, forwardFields(out, node.Name(), at)...))
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
// r's MAC verifies with node's secret, within maxForwardSkew of now; ok is
// false when r names no forwarding node. It needs the secret: without one
// (--cluster-insecure-peers), nothing is verified, and ok is false.
func VerifyForward(node Node, r *http.Request, now time.Time) (f Forwarded, ok bool, err error) {
	if !node.Authenticated() {
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
	if !hmac.Equal([]byte(mac), []byte(node.MAC(forwardKind, forwardFields(r, by, at)...))) {
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
