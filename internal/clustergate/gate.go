// Package clustergate is a cluster node's HTTP side: the gate, which
// answers every request while the node does not serve and forwards it to
// the leader, the follower's listener the gate serves on until the node
// leads, and what a leader adds to the server (the fence on every request,
// the check of forwarded requests, the handover). It reads the cluster's
// state through Node (internal/cluster); internal/cluster knows nothing of
// HTTP.
package clustergate

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"petstore/internal/api"
	"petstore/internal/cluster"
	"petstore/internal/requestid"
	"petstore/internal/tracing"
)

// Node is what the gate reads of the cluster's node (cluster.Node).
type Node interface {
	// Name is the node's name (--node-name).
	Name() string
	// Status is the node's view of the cluster now: its role, the leader.
	Status() cluster.Status
	// Authenticated says whether the nodes authenticate each other with
	// the cluster's secret; MAC is then the MAC of a message between them.
	Authenticated() bool
	MAC(kind string, fields ...string) string
}

// ClientTrust is what the service believes of the peers that reach it
// (internal/proxytrust), which the gate believes too.
type ClientTrust interface {
	// Has says whether the peer remoteAddr is a reverse proxy
	// (--proxy-addresses).
	Has(remoteAddr string) bool
	// ClientAddr is the address of r's client: its peer's, or from a
	// proxy, the one its headers name.
	ClientAddr(r *http.Request) string
	// ClientHeaders are the headers naming a client's address that a proxy
	// sets (--trusted-proxy-headers).
	ClientHeaders() []string
}

// clientHeaders name a client's address, or its request, to a service
// behind a proxy: a client's own never pass the gate.
var clientHeaders = []string{"X-Real-IP", "Forwarded", requestid.Header}

// New is the gate of node: it answers every request while this node does
// not serve (a follower, a candidate, or a leader whose fence is closed):
// /healthz 200, /readyz 503, and everything else forwarded to the leader,
// or answered 503 with Retry-After: 1 when no leader can be reached, or the
// leader named in etcd is not authenticated. Nothing is ever served from
// this node's copy of the data. The path is forwarded as the client sent
// it: the leader answers an unclean one (/v1//pets) as the public listener
// does, with the documented 404.
//
// The forwarded request says what this node's own rules decided, and no
// header of the client's naming an address, a request id or a forwarding
// node passes: its client's address in Petstore-Forwarded-For and
// X-Forwarded-For (the peer's, or from a proxy that trust names, the one
// its headers name), the host and scheme it reached in X-Forwarded-Host and
// -Proto (a proxy's, as they are), its request id in X-Request-Id (a
// proxy's, or a new one), and with the cluster's secret, the time and a
// MAC of all of it (signForward), which the leader checks before it
// believes any of it. trust may be nil: no peer is a proxy.
//
// At most maxForwards requests are forwarded at once, on at most as many
// connections to the leader: a follower takes no more of the leader's
// connections than one client network may (--max-conns-per-network), so
// that clients through one follower cannot fill the leader's global bound.
// A request over it is answered 503 with Retry-After: 1. 0: no bound.
func New(node Node, trust ClientTrust, maxForwards int, log *slog.Logger) http.Handler {
	g := &gate{node: node, log: log}
	if maxForwards > 0 {
		g.forwards = make(chan struct{}, maxForwards)
	}
	fromProxy := func(string) bool { return false }
	if trust != nil {
		fromProxy = trust.Has
	}
	g.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			in, out := pr.In, pr.Out
			pr.SetURL(in.Context().Value(leaderURLKey{}).(*url.URL))
			out.Host = in.Host
			client, _, err := net.SplitHostPort(in.RemoteAddr)
			if err != nil {
				client = in.RemoteAddr
			}
			host, proto := in.Host, "http"
			if in.TLS != nil {
				proto = "https"
			}
			drop := append(append([]string{}, forwardedHeaders...), clientHeaders...)
			if trust != nil {
				client = trust.ClientAddr(in)
				drop = append(drop, trust.ClientHeaders()...)
				if trust.Has(in.RemoteAddr) {
					host, proto = cmp.Or(in.Header.Get("X-Forwarded-Host"), host), cmp.Or(in.Header.Get("X-Forwarded-Proto"), proto)
				}
			}
			for _, h := range drop {
				out.Header.Del(h)
			}
			out.Header.Set("X-Forwarded-For", client)
			out.Header.Set("X-Forwarded-Host", host)
			out.Header.Set("X-Forwarded-Proto", proto)
			out.Header.Set(requestid.Header, requestid.Decide(in, fromProxy))
			out.Header.Set(ForwardedByHeader, node.Name())
			out.Header.Set(ForwardedForHeader, client)
			// The forward's span is the leader's request's parent.
			tracing.Inject(in.Context(), propagation.HeaderCarrier(out.Header))
			signForward(node, out, time.Now())
		},
		// Realtime (server-sent events) streams pass at once.
		FlushInterval: -1,
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           (&net.Dialer{Timeout: time.Second}).DialContext,
			ResponseHeaderTimeout: time.Minute,
			IdleConnTimeout:       time.Minute,
			MaxIdleConnsPerHost:   64,
			MaxConnsPerHost:       maxForwards,
		},
		ModifyResponse: func(resp *http.Response) error {
			if span := trace.SpanFromContext(resp.Request.Context()); span.IsRecording() {
				span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			span := trace.SpanFromContext(r.Context())
			tracing.Fail(span, err)
			log.Warn("Cluster: the leader did not answer a forwarded request", "path", r.URL.Path, "error", err.Error())
			notLeader(w, "This node is not the leader, and the leader did not answer; retry shortly.")
		},
	}
	return g
}

type gate struct {
	node     Node
	log      *slog.Logger
	proxy    *httputil.ReverseProxy
	forwards chan struct{} // a place per request being forwarded; nil: no bound
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		switch r.URL.Path {
		case "/healthz":
			nameAnswer(w)
			_ = api.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
			return
		case "/readyz":
			nameAnswer(w)
			api.WriteError(w, http.StatusServiceUnavailable, api.CodeNotReady, g.notReadyMessage())
			return
		}
	}
	status := g.node.Status()
	switch {
	case r.Header.Get(ForwardedByHeader) != "":
		notLeader(w, "This node is not the leader yet; retry shortly.")
	case status.Leader == nil && status.LeaderRefused != "":
		notLeader(w, "This node is not the leader, and the leader named in etcd does not prove that it belongs to the cluster; the server log says why.")
	case status.Leader == nil:
		notLeader(w, "This node is not the leader, and no leader is elected yet; retry shortly.")
	case status.Leader.Node == g.node.Name():
		// Elected and promoting, or a leader whose fence closed.
		notLeader(w, "This node cannot prove that it leads the cluster now; retry shortly.")
	default:
		leader, err := url.Parse(status.Leader.URL)
		if err != nil {
			notLeader(w, "This node is not the leader, and the leader's URL is not valid; the server log says why.")
			g.log.Error("Cluster: the leader's URL is not valid", "url", status.Leader.URL)
			return
		}
		if g.forwards != nil {
			select {
			case g.forwards <- struct{}{}:
				defer func() { <-g.forwards }()
			default:
				notLeader(w, "This node is not the leader, and forwards to it as many requests at once as it may; retry shortly.")
				return
			}
		}
		ctx, span := tracing.StartServer(r.Context(), propagation.HeaderCarrier(r.Header), "cluster.forward")
		defer span.End()
		if span.IsRecording() {
			span.SetAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.EscapedPath()),
				attribute.String("petstore.leader", status.Leader.Node))
		}
		g.proxy.ServeHTTP(w, r.WithContext(context.WithValue(ctx, leaderURLKey{}, leader)))
	}
}

// leaderURLKey holds, in a forwarded request's context, the leader's URL.
type leaderURLKey struct{}

// nameAnswer gives an answer of the gate's own a request id, as the
// leader's answers have (the leader names a forwarded request).
func nameAnswer(w http.ResponseWriter) {
	id := requestid.New()
	w.Header().Set(requestid.ResponseHeader, id)
	w.Header().Set(requestid.Header, id)
}

// notLeader answers 503 not_leader, to retry after a second. The caller's
// rate-limit count lives on the leader (or in Redis), which this node does
// not read, and the answer counts in no window: its X-RateLimit-* headers
// report this node alone, which admits nothing (limit 0, 0 remaining) until
// Retry-After ends (the reset).
func notLeader(w http.ResponseWriter, message string) {
	nameAnswer(w)
	h := w.Header()
	h.Set("Retry-After", "1")
	now := time.Now()
	reset := now.Unix() + 1
	if now.Nanosecond() > 0 {
		reset++
	}
	h.Set("X-RateLimit-Limit", "0")
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset, 10))
	api.WriteError(w, http.StatusServiceUnavailable, api.CodeNotLeader, message)
}

// notReadyMessage says why this node does not serve, naming the leader.
func (g *gate) notReadyMessage() string {
	s := g.node.Status()
	switch {
	case s.Role == cluster.Candidate && s.Term != 0:
		return fmt.Sprintf("This node won the election (term %d) and is preparing to serve.", s.Term)
	case s.EtcdError != "":
		return "This node cannot reach etcd; it keeps trying. The server log says why."
	case s.Leader == nil && s.LeaderRefused != "":
		return "This node refuses the leader named in etcd: it does not prove that it belongs to the cluster. The server log says why."
	case s.Leader == nil:
		return "This node is a candidate: no leader is elected yet." + unshippedMessage(s)
	default:
		return fmt.Sprintf("This node is a %s; the leader is %s at %s (term %d).", s.Role, s.Leader.Node, s.Leader.URL, s.Leader.Term) + unshippedMessage(s)
	}
}

// unshippedMessage says, when the leader last said so, that the replica
// lacks its latest commits: a failover would lose them.
func unshippedMessage(s cluster.Status) string {
	if s.LeaderUnshipped == 0 {
		return ""
	}
	return fmt.Sprintf(" The leader last said its commits of the last %s were not in the replica: a failover would lose them.", s.LeaderUnshipped)
}
