// Package connlimit bounds the connections a listener keeps open: per
// client network and in all, so that no client can hold every file
// descriptor of the process with idle connections.
package connlimit

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"petstore/limits"
)

// Reasons a connection is refused, the values of the refused metric's
// reason label.
const (
	PerAddress = "per_address"
	Global     = "global"
)

// Config sets the bounds.
type Config struct {
	// PerAddress is how many connections one client network (an IPv4
	// address, an IPv6 /64) may hold open; 0: no bound.
	PerAddress int
	// Global is how many connections may be open in all; 0: no bound.
	Global int
	// Exempt are the addresses whose connections PerAddress does not
	// bound: reverse proxies, from which every client's connection comes.
	// They count towards Global.
	Exempt []netip.Prefix
}

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
	byNetwork map[string]int

	refused [2]atomic.Uint64 // PerAddress, Global
	logged  [2]time.Time     // when each reason was last logged; under mu
}

// logEvery bounds the warnings of refused connections to one a minute per
// reason: a client hoarding connections makes thousands a second.
const logEvery = time.Minute

// New makes a Limiter that logs refusals to log.
func New(cfg Config, log *slog.Logger) *Limiter {
	return &Limiter{cfg: cfg, log: log, byNetwork: map[string]int{}}
}

// Open is how many connections are open.
func (l *Limiter) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Refused is how many connections were refused for reason (PerAddress or
// Global).
func (l *Limiter) Refused(reason string) uint64 {
	return l.refused[reasonIndex(reason)].Load()
}

func reasonIndex(reason string) int {
	if reason == Global {
		return 1
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
		network, reason := ln.l.admit(c.RemoteAddr())
		if reason == "" {
			return &conn{Conn: c, l: ln.l, network: network}, nil
		}
		_ = c.Close()
	}
}

// admit counts a new connection from addr, or says why it is refused.
func (l *Limiter) admit(addr net.Addr) (network, reason string) {
	ap, err := netip.ParseAddrPort(addr.String())
	ip := ap.Addr().Unmap()
	if err == nil {
		network = limits.Network(ip.String())
	} else {
		network = addr.String() // not an IP socket: one network of its own
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.cfg.Global > 0 && l.open >= l.cfg.Global:
		reason = Global
	case l.cfg.PerAddress > 0 && l.byNetwork[network] >= l.cfg.PerAddress && !l.exempt(ip):
		reason = PerAddress
	default:
		l.open++
		l.byNetwork[network]++
		return network, ""
	}
	i := reasonIndex(reason)
	n := l.refused[i].Add(1)
	if now := time.Now(); now.Sub(l.logged[i]) >= logEvery {
		l.logged[i] = now
		if reason == Global {
			l.log.Warn("Connections refused: as many are open as --max-conns allows",
				"maxConns", l.cfg.Global, "refusedSinceStart", n)
		} else {
			l.log.Warn("Connections refused: a client network holds as many as --max-conns-per-address allows",
				"network", network, "maxConnsPerAddress", l.cfg.PerAddress, "refusedSinceStart", n)
		}
	}
	return "", reason
}

func (l *Limiter) exempt(ip netip.Addr) bool {
	for _, p := range l.cfg.Exempt {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// release uncounts a connection of network.
func (l *Limiter) release(network string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.byNetwork[network]--; l.byNetwork[network] <= 0 {
		delete(l.byNetwork, network)
	}
}

// conn is an admitted connection; closing it, however often, releases it
// once.
type conn struct {
	net.Conn
	l       *Limiter
	network string
	closed  atomic.Bool
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	if c.closed.CompareAndSwap(false, true) {
		c.l.release(c.network)
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
