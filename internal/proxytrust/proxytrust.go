// Package proxytrust believes the client-address headers that PocketBase's
// settings trust (Settings, Application, User IP proxy headers) only from the
// reverse proxies that --proxy-addresses names: from any other peer they are
// removed before anything reads the client's address, which is then the
// connection's. Without it, any client could name its own address in
// X-Forwarded-For and escape every per-network limit.
package proxytrust

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"
)

// MiddlewareID is the middleware's id.
const MiddlewareID = "petstoreProxyTrust"

// Priority runs it before anything of PocketBase's or petstore's, the www
// redirect (-99999) included.
const Priority = -100001

// Proxies are the reverse proxies' own addresses and networks
// (--proxy-addresses).
type Proxies []netip.Prefix

// forwardedKin are the other headers a proxy sets about the request it
// received, which a service names its own address with (the served
// document's server, from X-Forwarded-Host and X-Forwarded-Proto): believed
// from the proxies alone, as the client-address headers are.
var forwardedKin = []string{"X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-Port", "X-Forwarded-Prefix", "Forwarded"}

type vouchedKey struct{}

// Vouch marks r's forwarded headers as decided by a party the service
// authenticated, whatever r's peer (a node of the cluster, whose forward's
// MAC verified, names the client as its peer): Middleware keeps them.
func Vouch(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), vouchedKey{}, true))
}

func vouched(r *http.Request) bool { return r.Context().Value(vouchedKey{}) != nil }

// Middleware removes the trusted proxy headers, and their kin, from
// requests whose peer is not one of p, unless vouched for (Vouch).
func (p Proxies) Middleware() *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id:       MiddlewareID,
		Priority: Priority,
		Func: func(e *core.RequestEvent) error {
			headers := e.App.Settings().TrustedProxy.Headers
			if len(headers) > 0 && !p.Has(e.Request.RemoteAddr) && !vouched(e.Request) {
				for _, h := range headers {
					e.Request.Header.Del(h)
				}
				for _, h := range forwardedKin {
					e.Request.Header.Del(h)
				}
			}
			return e.Next()
		},
	}
}

// Has reports whether the peer address remoteAddr (host:port) is one of p.
func (p Proxies) Has(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	addr = addr.Unmap().WithZone("")
	for _, prefix := range p {
		if prefix.Contains(addr) {
			return true
		}
	}
	return false
}

// Clients are the proxies and the headers naming a client's address that
// they set: what a cluster node's gate believes of its peers, as the
// service does.
type Clients struct {
	Proxies
	// Headers are --trusted-proxy-headers; none: X-Forwarded-For.
	Headers []string
}

// ClientHeaders are the headers naming a client's address that the
// proxies set.
func (c Clients) ClientHeaders() []string {
	if len(c.Headers) == 0 {
		return []string{"X-Forwarded-For"}
	}
	return c.Headers
}

// ClientAddr is the address of r's client: r's peer's, or from a proxy, the
// one the first of its headers that holds one names, as PocketBase reads
// it: in the header's last line, the rightmost address.
func (c Clients) ClientAddr(r *http.Request) string {
	if c.Has(r.RemoteAddr) {
		for _, h := range c.ClientHeaders() {
			values := r.Header.Values(h)
			if len(values) == 0 {
				continue
			}
			addrs := strings.Split(values[len(values)-1], ",")
			for i := len(addrs) - 1; i >= 0; i-- {
				if addr, err := netip.ParseAddr(strings.TrimSpace(addrs[i])); err == nil {
					return addr.String()
				}
			}
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
