package limits

import "net/netip"

// Network is the client network that a keyless window counts for the
// client address ip: an IPv4 address as it is, IPv4-mapped IPv6 addresses
// (::ffff:203.0.113.5) as their IPv4 address, and other IPv6 addresses by
// their /64, the smallest network an IPv6 client is given: one client, many
// addresses. Anything that is not an address counts as itself.
func Network(ip string) string {
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
