package webhooks

import (
	"crypto/x509"
	"net/netip"
)

// TrustRoots makes c trust roots, a test server's certificate, instead of
// the system's.
func TrustRoots(c *Client, roots *x509.CertPool) { c.roots = roots }

// WithHostAddrs is t on a host whose own addresses are addrs.
func WithHostAddrs(t Targets, addrs ...netip.Addr) Targets {
	t.hostAddrs = func() ([]netip.Addr, error) { return addrs, nil }
	return t
}
