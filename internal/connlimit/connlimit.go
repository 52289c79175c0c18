// Package connlimit bounds the connections a listener keeps open: per
// client network and in all, so that no client can hold every file
// descriptor of the process with idle connections.
package connlimit

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"petstore/internal/clientnet"
)

// Reasons a connection is refused, the values of the refused metric's
// reason label.
const (
	PerAddress = "per_address"
	PerNetwork = "per_network"
	Global     = "global"
)

// Reasons are the reasons, in the order of the refused metric.
var Reasons = []string{PerAddress, PerNetwork, Global}

// Config sets the bounds.
type Config struct {
	// PerAddress is how many connections one client (an IPv4 address, an
	// IPv6 /64) may hold open; 0: no bound.
	PerAddress int
	// PerNetwork is how many connections the clients of one wider network
	// (an IPv4 /24, an IPv6 /48) may hold open together; 0: no bound. Set
	// below Global, it keeps a few dozen addresses of one network from
	// filling Global and locking every other client out.
	PerNetwork int
	// Global is how many connections may be open in all; 0: no bound.
	Global int
	// Exempt are the addresses whose connections PerAddress and PerNetwork
	// do not bound: reverse proxies, from which every client's connection
	// comes. They count towards Global.
	Exempt []netip.Prefix
	// Listener names the listener in the warnings of refusals when it is
	// not the public one, whose bounds are the --max-conns flags.
	Listener string
}

// DefaultPerNetwork is the PerNetwork bound for a Global bound: an eighth
// of it, so that it takes clients in eight wider networks to fill it.
func DefaultPerNetwork(global int) int { return max(global/8, 1) }

// ParseAddresses reads a comma-separated list of IP addresses and networks
// (127.0.0.1, 10.0.0.0/8, ::1); an empty list is none.
func ParseAddresses(list string) ([]netip.Prefix, error) {
	var prefixes []netip.Prefix
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if p, err := netip.ParsePrefix(item); err == nil {
			prefixes = append(prefixes, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(item)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an IP address nor a network (10.0.0.0/8)", item)
		}
		a = a.Unmap()
		prefixes = append(prefixes, netip.PrefixFrom(a, a.BitLen()))
	}
	return prefixes, nil
}

// Limiter counts the connections of the listeners it wraps.
type Limiter struct {
	cfg Config
	log *slog.Logger

	mu        sync.Mutex
	open      int
	byAddress map[string]int // by client: an IPv4 address, an IPv6 /64
	byNetwork map[string]int // by wider network: an IPv4 /24, an IPv6 /48

	refused [3]atomic.Uint64 // in the order of Reasons
	logged  [3]time.Time     // when each reason was last logged; under mu
}

// logEvery bounds the warnings of refused connections to one a minute per
// reason: a client hoarding connections makes thousands a second.
const logEvery = time.Minute

// New makes a Limiter that logs refusals to log.
func New(cfg Config, log *slog.Logger) *Limiter {
	return &Limiter{cfg: cfg, log: log, byAddress: map[string]int{}, byNetwork: map[string]int{}}
}

// Config is the bounds l keeps.
func (l *Limiter) Config() Config { return l.cfg }

// Open is how many connections are open.
func (l *Limiter) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Refused is how many connections were refused for reason (one of
// Reasons).
func (l *Limiter) Refused(reason string) uint64 {
	return l.refused[reasonIndex(reason)].Load()
}

func reasonIndex(reason string) int {
	switch reason {
	case PerNetwork:
		return 1
	case Global:
		return 2
	}
	return 0
}

// Wrap returns ln with the bounds: a connection over one is closed as soon
// as it is accepted, before anything is read from it, so that it holds no
// descriptor; its client sees the connection closed and may retry.
func (l *Limiter) Wrap(ln net.Listener) net.Listener { return &listener{Listener: ln, l: l} }

type listener struct {
	net.Listener
	l *Limiter
}

func (ln *listener) Accept() (net.Conn, error) {
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		client, reason := ln.l.admit(c.RemoteAddr())
		if reason == "" {
			return &conn{Conn: c, l: ln.l, client: client}, nil
		}
		_ = c.Close()
	}
}

// admit counts a new connection from addr, or says why it is refused.
func (l *Limiter) admit(addr net.Addr) (c client, reason string) {
	ap, err := netip.ParseAddrPort(addr.String())
	ip := ap.Addr().Unmap()
	if err == nil {
		c = client{address: clientnet.Of(ip.String()), network: clientnet.Wide(ip)}
	} else {
		c = client{address: addr.String(), network: addr.String()} // not an IP socket: a network of its own
	}
	c.exempt = l.exempt(ip)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.cfg.Global > 0 && l.open >= l.cfg.Global:
		reason = Global
	case c.exempt:
		l.open++
		return c, ""
	case l.cfg.PerAddress > 0 && l.byAddress[c.address] >= l.cfg.PerAddress:
		reason = PerAddress
	case l.cfg.PerNetwork > 0 && l.byNetwork[c.network] >= l.cfg.PerNetwork:
		reason = PerNetwork
	default:
		l.open++
		l.byAddress[c.address]++
		l.byNetwork[c.network]++
		return c, ""
	}
	i := reasonIndex(reason)
	n := l.refused[i].Add(1)
	if now := time.Now(); now.Sub(l.logged[i]) >= logEvery {
		l.logged[i] = now
		switch {
		case l.cfg.Listener != "":
			l.log.Warn("Connections refused: as many are open as the "+l.cfg.Listener+" allows",
				"reason", reason, "network", c.network, "refusedSinceStart", n)
		case reason == Global:
			l.log.Warn("Connections refused: as many are open as --max-conns allows",
				"maxConns", l.cfg.Global, "refusedSinceStart", n)
		case reason == PerNetwork:
			l.log.Warn("Connections refused: a client network holds as many as --max-conns-per-network allows",
				"network", c.network, "maxConnsPerNetwork", l.cfg.PerNetwork, "refusedSinceStart", n)
		default:
			l.log.Warn("Connections refused: a client network holds as many as --max-conns-per-address allows",
				"network", c.address, "maxConnsPerAddress", l.cfg.PerAddress, "refusedSinceStart", n)
		}
	}
	return client{}, reason
}

// client names where a connection comes from, as each bound counts it.
type client struct {
	address string // clientnet.Of: an IPv4 address, an IPv6 /64
	network string // clientnet.Wide: an IPv4 /24, an IPv6 /48
	exempt  bool   // a proxy's: counted in Global alone
}

func (l *Limiter) exempt(ip netip.Addr) bool {
	for _, p := range l.cfg.Exempt {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// release uncounts a connection of c.
func (l *Limiter) release(c client) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if c.exempt {
		return
	}
	if l.byAddress[c.address]--; l.byAddress[c.address] <= 0 {
		delete(l.byAddress, c.address)
	}
	if l.byNetwork[c.network]--; l.byNetwork[c.network] <= 0 {
		delete(l.byNetwork, c.network)
	}
}

// conn is an admitted connection; closing it, however often, releases it
// once.
type conn struct {
	net.Conn
	l      *Limiter
	client client
	closed atomic.Bool
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	if c.closed.CompareAndSwap(false, true) {
		c.l.release(c.client)
	}
	return err
}

// CloseWrite is the connection's, for Go's HTTP server: after an error
// answer (431, 400) it closes the sending side and waits before closing, so
// that a client still sending reads the answer instead of a reset.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// ReadFrom lets a response copied from a file use the connection's own
// ReadFrom (sendfile), as it would unwrapped.
func (c *conn) ReadFrom(r io.Reader) (int64, error) { return io.Copy(c.Conn, r) }

// BodyDeadline bounds how long a request's body may take to arrive: a
// request that has a body gets a read deadline d after its headers were
// read, so that a client sending its body a byte at a time holds its
// connection for d, not for the server's read timeout (PocketBase's is five
// minutes). Requests without a body, such as the realtime stream's GET,
// keep the server's deadline. d of 0 sets none.
func BodyDeadline(d time.Duration, next http.Handler) http.Handler {
	if d <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 { // -1: chunked, or not told
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d))
		}
		next.ServeHTTP(w, r)
	})
}
