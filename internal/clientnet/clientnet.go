// Package clientnet names the networks that per-client bounds count by: a
// client (an IPv4 address, an IPv6 /64), and the wider network it is in (an
// IPv4 /24, an IPv6 /48). The rate limits, the connection bounds, the
// request log and the sign-in throttle count alike.
package clientnet

import "net/netip"

// Of is the client network of the client address ip: an IPv4 address as
// it is, IPv4-mapped IPv6 addresses (::ffff:203.0.113.5) as their IPv4
// address, and other IPv6 addresses by their /64, the smallest network an IPv6 client is given: one client, many
// addresses. Anything that is not an address counts as itself.
func Of(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	if a = a.Unmap(); a.Is4() {
		return a.String()
	}
	p, err := a.WithZone("").Prefix(64)
	if err != nil {
		return ip
	}
	return p.String()
}

// Wide is the wider network of ip: an IPv4 /24, an IPv6 /48, the smallest
// network a site is commonly given.
func Wide(ip netip.Addr) string {
	ip = ip.Unmap()
	bits := 48
	if ip.Is4() {
		bits = 24
	}
	p, err := ip.WithZone("").Prefix(bits)
	if err != nil {
		return ip.String()
	}
	return p.String()
}
