package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// ErrForbiddenTarget is the error of a target that is not reachable without
// `serve --webhooks-allow-private`: an address that is loopback, private,
// link-local, shared (CGNAT), a cloud's metadata service, reserved for
// documentation or other uses, not unicast, or one of this host's own.
var ErrForbiddenTarget = errors.New("webhooks: the target is a loopback, private, link-local, CGNAT, metadata, documentation or reserved address, or this host's own")

// forbiddenPrefixes are the ranges beyond netip's own tests (IsLoopback,
// IsPrivate, IsLinkLocalUnicast, ...) that a public endpoint never is: every
// range of IANA's IPv4 and IPv6 special-purpose address registries that is
// not globally reachable, and a few that are but that no receiver sits at
// (TestGuardRefusesIANASpecialPurposeRanges holds the registries' tables).
// A block is refused whole, with the anycast addresses of protocols that
// the registries list inside it. AWS's IPv6 metadata (fd00:ec2::254) is
// unique local, which IsPrivate covers. An IPv4 address written as IPv6
// (mapped, compatible or translated) is refused whatever it embeds: a
// public endpoint is written as IPv4, and the resolver's IPv4 answers are
// checked as IPv4.
var forbiddenPrefixes = []netip.Prefix{
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated): [::127.0.0.1]
	netip.MustParsePrefix("::ffff:0:0/96"),   // IPv4-mapped: [::ffff:127.0.0.1]
	netip.MustParsePrefix("::ffff:0:0:0/96"), // IPv4-translated (SIIT): [::ffff:0:127.0.0.1]
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation (TEST-NET-1)
	netip.MustParsePrefix("198.51.100.0/24"), // documentation (TEST-NET-2)
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation (TEST-NET-3)
	netip.MustParsePrefix("3fff::/20"),       // documentation
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // CGNAT (Alibaba's metadata, 100.100.100.200, among them)
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments (PCP and TURN anycast among them)
	netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast (deprecated), 6a44 relay
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("192.31.196.0/24"), // AS112 (DNS sink)
	netip.MustParsePrefix("192.52.193.0/24"), // AMT
	netip.MustParsePrefix("192.175.48.0/24"), // AS112 direct delegation (DNS sink)
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and the broadcast address
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64: may reach any of the above
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local NAT64
	netip.MustParsePrefix("2002::/16"),       // 6to4: embeds an IPv4 address
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("100::/64"),        // discard
	netip.MustParsePrefix("100:0:0:1::/64"),  // dummy prefix
	// IETF protocol assignments: Teredo (embeds an IPv4 address),
	// benchmarking, ORCHID, ORCHIDv2 and DRIP entity tags (identifiers,
	// not locators), AS112, and the anycast addresses of PCP, TURN, DNS-SD
	// and AMT.
	netip.MustParsePrefix("2001::/23"),
	netip.MustParsePrefix("5f00::/16"),         // SRv6 segment identifiers
	netip.MustParsePrefix("2620:4f:8000::/48"), // AS112 direct delegation (DNS sink)
}

// forbiddenNames are host names of metadata services, refused before any
// lookup.
var forbiddenNames = []string{"localhost", "metadata", "metadata.google.internal", "metadata.goog", "instance-data"}

// reservedAddr reports whether addr may not be reached without
// --webhooks-allow-private, wherever petstore runs: Targets refuse this
// host's own addresses too. An address with a zone ([2001:db8::1%eth0]) is
// refused: no prefix contains it, and a public endpoint has none.
func reservedAddr(addr netip.Addr) bool {
	if !addr.IsValid() || addr.Zone() != "" || addr.IsLoopback() || addr.IsPrivate() || addr.IsLinkLocalUnicast() ||
		addr.IsLinkLocalMulticast() || addr.IsInterfaceLocalMulticast() || addr.IsMulticast() || addr.IsUnspecified() {
		return true
	}
	for _, p := range forbiddenPrefixes {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// Resolver looks a host name up; net.DefaultResolver.LookupNetIP in
// service, a map of test names in tests.
type Resolver func(ctx context.Context, host string) ([]netip.Addr, error)

func defaultResolver(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// hostAddresses are this host's own interface addresses, read once: an
// endpoint at one of them is the service itself, or a neighbour on the
// host, whatever range the address is in.
var hostAddresses = sync.OnceValues(func() ([]netip.Addr, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("webhooks: read this host's addresses: %w", err)
	}
	var own []netip.Addr
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				own = append(own, ip.Unmap())
			}
		}
	}
	return own, nil
})

// Targets decides which URLs an endpoint may have and which addresses a
// delivery may connect to.
type Targets struct {
	// AllowPrivate lets endpoints be loopback, private and the rest
	// (serve --webhooks-allow-private): for a receiver on the same machine
	// or network.
	AllowPrivate bool
	// Resolve looks host names up; nil: the system's resolver.
	Resolve Resolver

	hostAddrs func() ([]netip.Addr, error) // nil: hostAddresses
}

// forbidden reports whether addr may not be reached: reservedAddr, or one of
// this host's own addresses. If those cannot be read, nothing may.
func (t Targets) forbidden(addr netip.Addr) (bool, error) {
	if reservedAddr(addr) {
		return true, nil
	}
	own := t.hostAddrs
	if own == nil {
		own = hostAddresses
	}
	addrs, err := own()
	if err != nil {
		return true, err
	}
	return slices.Contains(addrs, addr), nil
}

// checkAddr is the error of addr as a target: ErrForbiddenTarget, or why
// it cannot be told.
func (t Targets) checkAddr(addr netip.Addr) error {
	no, err := t.forbidden(addr)
	if err != nil {
		return err
	}
	if no {
		return ErrForbiddenTarget
	}
	return nil
}

func (t Targets) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if t.Resolve != nil {
		return t.Resolve(ctx, host)
	}
	return defaultResolver(ctx, host)
}

// CheckURL returns the error of raw as an endpoint's URL: only http and
// https, with a host, without user information; and without AllowPrivate,
// a host that is, or resolves to, a forbidden address is refused.
func (t Targets) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("the URL cannot be parsed")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("the URL's scheme must be http or https")
	}
	if u.Host == "" || u.Hostname() == "" {
		return errors.New("the URL has no host")
	}
	if u.User != nil {
		return errors.New("the URL must not hold a user name or password")
	}
	if u.Fragment != "" {
		return errors.New("the URL must not have a fragment")
	}
	if t.AllowPrivate {
		return nil
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if addr, err := netip.ParseAddr(host); err == nil {
		return t.checkAddr(addr)
	}
	for _, name := range forbiddenNames {
		if host == name || strings.HasSuffix(host, "."+name) {
			return ErrForbiddenTarget
		}
	}
	addrs, err := t.resolve(ctx, host)
	if err != nil {
		return fmt.Errorf("the URL's host %s does not resolve: %w", host, err)
	}
	for _, a := range addrs {
		// The resolver may give an IPv4 answer in its mapped form; it is
		// dialed, and so checked, as IPv4.
		if err := t.checkAddr(a.Unmap()); err != nil {
			return err
		}
	}
	return nil
}

// control is a net.Dialer's Control hook: it runs after the address is
// resolved and before the socket connects, so it refuses a forbidden
// address (a DNS answer that changed since the endpoint was checked) before
// any packet leaves.
func (t Targets) control(network, address string, _ syscall.RawConn) error {
	if t.AllowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhooks: dial %s: %w", address, err)
	}
	if err := t.checkAddr(ap.Addr()); err != nil {
		return fmt.Errorf("%w: %s", err, ap.Addr())
	}
	return nil
}

// DialContext dials address as a delivery does: its host looked up with
// the Targets' resolver, and each address checked by the Control hook
// before connecting.
func (t Targets) DialContext(d *net.Dialer) func(ctx context.Context, network, address string) (net.Conn, error) {
	dialer := *d
	dialer.Control = t.control
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		var addrs []netip.Addr
		if a, err := netip.ParseAddr(host); err == nil {
			addrs = []netip.Addr{a}
		} else if addrs, err = t.resolve(ctx, host); err != nil {
			return nil, err
		}
		var firstErr error
		for _, a := range addrs {
			conn, err := dialer.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
			if err == nil {
				return conn, nil
			}
			if firstErr == nil {
				firstErr = err
			}
		}
		if firstErr == nil {
			firstErr = fmt.Errorf("webhooks: %s has no address", host)
		}
		return nil, firstErr
	}
}
