package cluster

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"time"

	"petstore/internal/api"
	"petstore/internal/requestid"
)

// ForwardedByHeader names the node that forwarded a request to the leader.
// A node that does not serve answers such a request itself (503) rather
// than forward it again: two nodes with stale views never pass a request
// back and forth.
const ForwardedByHeader = "Petstore-Forwarded-By"

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

// Gate answers every request while this node does not serve (a follower, a
// candidate, or a leader whose fence is closed): /healthz 200, /readyz 503,
// and everything else forwarded to the leader, or answered 503 with
// Retry-After: 1 when no leader can be reached, or the leader named in
// etcd is not authenticated. Nothing is ever served from this node's copy
// of the data.
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
func (n *Node) Gate(trust ClientTrust) http.Handler {
	fromProxy := func(string) bool { return false }
	if trust != nil {
		fromProxy = trust.Has
	}
	proxy := &httputil.ReverseProxy{
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
			out.Header.Set(ForwardedByHeader, n.cfg.NodeName)
			out.Header.Set(ForwardedForHeader, client)
			n.signForward(out, time.Now())
		},
		// Realtime (server-sent events) streams pass at once.
		FlushInterval: -1,
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           (&net.Dialer{Timeout: time.Second}).DialContext,
			ResponseHeaderTimeout: time.Minute,
			IdleConnTimeout:       time.Minute,
			MaxIdleConnsPerHost:   64,
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			n.log.Warn("Cluster: the leader did not answer a forwarded request", "path", r.URL.Path, "error", err.Error())
			notLeader(w, "This node is not the leader, and the leader did not answer; retry shortly.")
		},
	}
	mux := http.NewServeMux()
	named := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			nameAnswer(w)
			h(w, r)
		}
	}
	mux.HandleFunc("GET /healthz", named(func(w http.ResponseWriter, r *http.Request) {
		_ = api.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}))
	mux.HandleFunc("GET /readyz", named(func(w http.ResponseWriter, r *http.Request) {
		api.WriteError(w, http.StatusServiceUnavailable, api.CodeNotReady, n.notReadyMessage())
	}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		status := n.Status()
		switch {
		case r.Header.Get(ForwardedByHeader) != "":
			notLeader(w, "This node is not the leader yet; retry shortly.")
		case status.Leader == nil && status.LeaderRefused != "":
			notLeader(w, "This node is not the leader, and the leader named in etcd does not prove that it belongs to the cluster; the server log says why.")
		case status.Leader == nil:
			notLeader(w, "This node is not the leader, and no leader is elected yet; retry shortly.")
		case status.Leader.Node == n.cfg.NodeName:
			// Elected and promoting, or a leader whose fence closed.
			notLeader(w, "This node cannot prove that it leads the cluster now; retry shortly.")
		default:
			leader, err := url.Parse(status.Leader.URL)
			if err != nil {
				notLeader(w, "This node is not the leader, and the leader's URL is not valid; the server log says why.")
				n.log.Error("Cluster: the leader's URL is not valid", "url", status.Leader.URL)
				return
			}
			proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), leaderURLKey{}, leader)))
		}
	})
	return mux
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
func (n *Node) notReadyMessage() string {
	s := n.Status()
	switch {
	case s.Role == Candidate && s.Term != 0:
		return fmt.Sprintf("This node won the election (term %d) and is preparing to serve.", s.Term)
	case s.EtcdError != "":
		return "This node cannot reach etcd; it keeps trying. The server log says why."
	case s.Leader == nil && s.LeaderRefused != "":
		return "This node refuses the leader named in etcd: it does not prove that it belongs to the cluster. The server log says why."
	case s.Leader == nil:
		return "This node is a candidate: no leader is elected yet."
	default:
		return fmt.Sprintf("This node is a %s; the leader is %s at %s (term %d).", s.Role, s.Leader.Node, s.Leader.URL, s.Leader.Term)
	}
}
