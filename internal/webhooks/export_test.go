package webhooks

import "crypto/x509"

// TrustRoots makes c trust roots, a test server's certificate, instead of
// the system's.
func TrustRoots(c *Client, roots *x509.CertPool) { c.roots = roots }
