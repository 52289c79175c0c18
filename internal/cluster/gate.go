package cluster

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"petstore/internal/api"
	"petstore/internal/requestid"
)

// ForwardedByHeader names the node that forwarded a request to the leader.
// A node that does not serve answers such a request itself (503) rather
// than forward it again: two nodes with stale views never pass a request
// back and forth.
const ForwardedByHeader = "Petstore-Forwarded-By"

// forwardedHeaders are what a proxy says of the client: a trusted proxy's
// pass to the leader as they are.
var forwardedHeaders = []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"}

// Gate answers every request while this node does not serve (a follower, a
// candidate, or a leader whose fence is closed): /healthz 200, /readyz 503,
// and everything else forwarded to the leader, or answered 503 with
// Retry-After: 1 when no leader can be reached. Nothing is ever served from
// this node's copy of the data.
//
// The forwarded request names its client in X-Forwarded-For (and the host
// and scheme it reached in X-Forwarded-Host and -Proto): the peer's address,
// or, when trusted says the peer is a reverse proxy (--proxy-addresses),
// what that proxy said, so the leader counts the client behind a load
// balancer that reached a follower. trusted may be nil: no peer is trusted.
func (n *Node) Gate(trusted func(remoteAddr string) bool) http.Handler {
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(pr.In.Context().Value(leaderURLKey{}).(*url.URL))
			if trusted != nil && trusted(pr.In.RemoteAddr) && pr.In.Header.Get("X-Forwarded-For") != "" {
				for _, h := range forwardedHeaders {
					if v := pr.In.Header.Values(h); len(v) > 0 {
						pr.Out.Header[h] = v
					}
				}
			} else {
				pr.SetXForwarded()
			}
			pr.Out.Host = pr.In.Host
			pr.Out.Header.Set(ForwardedByHeader, n.cfg.NodeName)
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

func notLeader(w http.ResponseWriter, message string) {
	nameAnswer(w)
	w.Header().Set("Retry-After", "1")
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
	case s.Leader == nil:
		return "This node is a candidate: no leader is elected yet."
	default:
		return fmt.Sprintf("This node is a %s; the leader is %s at %s (term %d).", s.Role, s.Leader.Node, s.Leader.URL, s.Leader.Term)
	}
}
